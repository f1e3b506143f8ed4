#!/usr/bin/env python3
"""Cross-check of the kernel benchmark with PyTorch on the same GPU (optional; run where
PyTorch with CUDA is installed, e.g. by kernels/run_calibration.sh's caller).

Times, with CUDA events after warm-up (median of 20), the two headline shapes of issue 8:
  - torch.matmul bf16 8192x8192x8192 (cuBLAS), TFLOP/s = 2*M*N*K / t
  - F.scaled_dot_product_attention causal prefill, batch 2, 8192 tokens, 64 query heads,
    8 KV heads (Llama-3.1-70B), head dim 128, bf16; FLOPs = 4*b*h*L*L*d / 2 (causal half)
and prints one CSV line per shape, to compare with fleetsim_kernel_bench's cuBLASLt and
prefill-attention rows.
"""
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_crosscheck: PyTorch not installed; skipped", file=sys.stderr)
    sys.exit(0)


def time_ms(fn, reps=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    if not torch.cuda.is_available():
        print("torch_crosscheck: no CUDA device; skipped", file=sys.stderr)
        return 0
    torch.manual_seed(0)
    print("what,shape,median_ms,tflops,torch,device")
    dev = torch.cuda.get_device_name(0)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = time_ms(lambda: torch.matmul(a, w.t()))
    print(f"torch.matmul bf16,8192x8192x8192,{ms:.4f},{2 * n**3 / ms / 1e9:.1f},{torch.__version__},{dev}")
    del a, w
    b, h, hkv, L, d = 2, 64, 8, 8192, 128
    q = torch.randn(b, h, L, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hkv, L, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, hkv, L, d, device="cuda", dtype=torch.bfloat16)
    ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
    flops = 4 * b * h * L * L * d / 2
    print(f"sdpa causal bf16,b={b} h={h}/{hkv} L={L} d={d},{ms:.4f},{flops / ms / 1e9:.1f},{torch.__version__},{dev}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
