#!/usr/bin/env python3
"""The framework's MoE grouped GEMM, timed on this GPU at serving shapes (issue 16).

Runs where PyTorch with CUDA is installed (the device machine's image has it). For the routed
experts of the catalog's MoE models, with the experts one GPU holds under expert parallelism
(EP: E/EP whole experts) or tensor parallelism (TP: all E experts, each a 1/TP slice), it times
at 1 to 16k tokens per GPU:

  grouped   torch._grouped_mm, bf16 (CUTLASS grouped GEMM on Hopper): x_perm[R][k] times each
            expert's W_e[n][k]^T over that expert's rows, R = rows routed to this GPU
  grouped8  torch._scaled_grouped_mm, FP8 e4m3 with row-wise scales (bf16 out), where it runs
  dense     torch.matmul, bf16, the same R rows times one expert's W[n][k]^T: the dense rate
            at the same total tokens (issue 16's reference for the grouped GEMM)
  dense8    torch._scaled_mm, FP8 row-wise, likewise
  layer     the whole routed-expert layer on this GPU (router GEMM, softmax, top-k, sort by
            expert, gather, grouped gate_up, SiLU*mul, grouped down, weighted scatter-add),
            captured in a CUDA graph so that host launch time stays out; bf16

Routing: every token's top-k of random logits over all E experts (for EP, the tokens of all
EP ranks, so the local experts see what one rank of a balanced EP group sees). Weights and
inputs are random normal (never zeros). Each grouped result is checked against a float32
per-expert loop on the rows of a few experts.

Timing: CUDA events around the operator, after warm-up; before each timed run a 2 x L2 buffer
is zeroed (L2 flush) and a ~20 us spin kernel (torch.cuda._sleep) runs, so that the host's
launch time stays outside the events. Median of `--reps` runs.

Writes CSV to stdout (or --out): one row per (model, layout, tokens, projection, impl); for
the layer rows, n and k are the hidden size and the (local) expert FFN size. Takes about a
minute on an H200.
"""
import argparse
import math
import os
import sys
import time

try:
    import torch
except ImportError:
    print("moe_grouped_torch: PyTorch not installed; skipped", file=sys.stderr)
    sys.exit(0)

# Routed-expert shapes from hw_models/catalog/models/*.yaml (hidden, experts, top_k,
# expert_ffn), and the parallel layouts these models are served with in the validation suite.
MODELS = [
    # name, hidden, experts, top_k, expert_ffn, [(layout, degree)]
    ("deepseek-v3", 7168, 256, 8, 2048, [("ep", 8), ("ep", 1)]),
    ("qwen3-235b-a22b", 4096, 128, 8, 1536, [("ep", 8), ("tp", 8)]),
    ("qwen3-30b-a3b", 2048, 128, 8, 768, [("ep", 1)]),
    ("gpt-oss-120b", 2880, 128, 4, 2880, [("ep", 1)]),
    ("llama-4-maverick", 5120, 128, 1, 8192, [("ep", 8)]),
    ("mixtral-8x7b", 4096, 8, 2, 14336, [("ep", 1)]),
]
TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384]
# FLEETSIM_TORCH_DEVICE=cpu runs the script's logic on the CPU (wall-clock timing, per-expert
# loops where the grouped operators are missing) to check it without a GPU; its times mean
# nothing.
DEV = os.environ.get("FLEETSIM_TORCH_DEVICE", "cuda")


class Timer:
    def __init__(self, reps):
        self.reps = reps
        if DEV == "cpu":
            return
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 64 << 20) or (64 << 20)
        self.flush = torch.empty(2 * l2, dtype=torch.uint8, device=DEV)

    def median_us(self, fn, warmup=3):
        for _ in range(warmup):
            fn()
        ts = []
        if DEV == "cpu":
            for _ in range(self.reps):
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e6)
            ts.sort()
            return ts[len(ts) // 2], ts[0], ts[-1]
        torch.cuda.synchronize()
        for _ in range(self.reps):
            self.flush.zero_()
            torch.cuda._sleep(40_000)  # ~20 us at 1.98 GHz: the host's launches run ahead
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1000.0)
        ts.sort()
        return ts[len(ts) // 2], ts[0], ts[-1]


def grouped_mm(a, b, offs):
    f = getattr(torch, "_grouped_mm", None) or getattr(torch.nn.functional, "grouped_mm", None)
    if f is not None:
        return f(a, b, offs=offs, out_dtype=torch.bfloat16)
    if DEV != "cpu":
        raise RuntimeError("this PyTorch has no grouped GEMM (torch._grouped_mm)")
    # CPU dry run only: the same function as a loop over the groups
    out, r0 = [], 0
    for g, r1 in enumerate(offs.tolist()):
        out.append(a[r0:r1] @ b[g])
        r0 = r1
    return torch.cat(out)


def route(tokens_all, experts, top_k, local, gen):
    """Top-k of random logits for tokens_all tokens; returns the sorted local expert ids
    (0..local-1) of the assignments that land on experts [0, local)."""
    logits = torch.randn(tokens_all, experts, device=DEV, generator=gen)
    ids = logits.topk(top_k, dim=1).indices.flatten()
    ids = ids[ids < local]
    return torch.sort(ids).values


def offsets_of(sorted_ids, groups):
    counts = torch.bincount(sorted_ids, minlength=groups)
    return counts, torch.cumsum(counts, 0).to(torch.int32)


def check(out, x, w, counts, label):
    """Relative L2 error of out against a float32 per-expert loop over up to 4 experts."""
    c = counts.tolist()
    starts = [0]
    for v in c:
        starts.append(starts[-1] + v)
    picked = [e for e in range(len(c)) if c[e] > 0][:2] + [e for e in range(len(c)) if c[e] > 0][-2:]
    num = den = 0.0
    for e in set(picked):
        r0, r1 = starts[e], starts[e + 1]
        ref = x[r0:r1].float() @ w[e].float().t()
        num += (out[r0:r1].float() - ref).pow(2).sum().item()
        den += ref.pow(2).sum().item()
    err = math.sqrt(num / den) if den > 0 else 0.0
    ok = err < 1e-2 and not torch.isnan(out).any().item()
    if not ok:
        print(f"moe_grouped_torch: CHECK FAILED {label}: rel L2 {err:.3g}", file=sys.stderr)
    return err, ok


def fp8_rowwise(t):
    """e4m3 copy of t [.., rows, k] with one float32 scale per row (amax / 448); a 3-D t is
    converted one expert at a time (float32 temporaries of one expert only)."""
    if t.dim() == 3:
        qs, ss = zip(*(fp8_rowwise(t[e]) for e in range(t.shape[0])))
        return torch.stack(qs), torch.stack(ss)
    f = t.float()
    scale = f.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / 448.0
    q = (f / scale).to(torch.float8_e4m3fn)
    return q, scale.squeeze(-1).contiguous()


def dequant(q, scale):
    """bf16 values of an e4m3 tensor with row scales (one expert at a time for 3-D)."""
    if q.dim() == 3:
        return torch.stack([dequant(q[e], scale[e]) for e in range(q.shape[0])])
    return (q.float() * scale[:, None]).to(torch.bfloat16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out", default="-")
    ap.add_argument("--models", default="")
    ap.add_argument("--tokens", default="")
    ap.add_argument("--shrink", type=int, default=1,
                    help="divide hidden and expert sizes by this (dry runs only)")
    args = ap.parse_args()
    if DEV != "cpu" and not torch.cuda.is_available():
        print("moe_grouped_torch: no CUDA device; skipped", file=sys.stderr)
        return 0
    tokens_list = [int(t) for t in args.tokens.split(",")] if args.tokens else TOKENS
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    dev = torch.cuda.get_device_name(0) if DEV != "cpu" else "cpu (dry run)"
    print(f"# torch {torch.__version__}, {dev}, CUDA {torch.version.cuda}", file=out)
    print("model,layout,degree,local_experts,tokens_per_gpu,rows,hit_experts,max_rows,n,k,"
          "impl,median_us,min_us,max_us,tflops,weight_gb_s,rel_l2,note", file=out)
    timer = Timer(args.reps)
    gen = torch.Generator(device=DEV)
    gen.manual_seed(1234)
    failures = 0
    for name, h, E, top_k, fe, layouts in MODELS:
        if args.models and name not in args.models.split(","):
            continue
        if args.shrink > 1:
            h, fe = max(8, h // args.shrink // 8 * 8), max(64, fe // args.shrink // 64 * 64)
        for layout, deg in layouts:
            local = E // deg if layout == "ep" else E
            fl = fe // deg if layout == "tp" else fe
            # [local][n][k] weights, gate and up fused; down
            w1 = torch.randn(local, 2 * fl, h, device=DEV, dtype=torch.bfloat16, generator=gen)
            w2 = torch.randn(local, h, fl, device=DEV, dtype=torch.bfloat16, generator=gen)
            w1 *= 1.0 / math.sqrt(h)
            w2 *= 1.0 / math.sqrt(fl)
            try:
                w1_8, s1 = fp8_rowwise(w1)
                w2_8, s2 = fp8_rowwise(w2)
                wdq1 = dequant(w1_8, s1)  # what the FP8 GEMM sees
                wdq2 = dequant(w2_8, s2)
                fp8_err = ""
            except Exception as ex:  # noqa: BLE001 - no FP8 in this PyTorch
                w1_8 = w2_8 = s1 = s2 = wdq1 = wdq2 = None
                fp8_err = f"{type(ex).__name__}: {ex}"
            wr = torch.randn(E, h, device=DEV, dtype=torch.bfloat16, generator=gen) / math.sqrt(h)
            for T in tokens_list:
                ids = route(T * (deg if layout == "ep" else 1), E, top_k, local, gen)
                R = ids.numel()
                if R == 0:
                    continue
                counts, offs = offsets_of(ids, local)
                hit = int((counts > 0).sum().item())
                mx = int(counts.max().item())
                for proj, w, w8, sw, n, k in (("gate_up", w1, w1_8, s1, 2 * fl, h),
                                              ("down", w2, w2_8, s2, h, fl)):
                    x = torch.randn(R, k, device=DEV, dtype=torch.bfloat16, generator=gen)
                    flops = 2.0 * R * n * k
                    wbytes = hit * n * k * 2.0
                    base = f"{name},{layout},{deg},{local},{T},{R},{hit},{mx},{n},{k}"
                    # bf16 grouped
                    bt = w.transpose(-2, -1)
                    try:
                        y = grouped_mm(x, bt, offs)
                        err, ok = check(y, x, w, counts, f"{name} {proj} T={T}")
                        failures += not ok
                        med, lo, hi = timer.median_us(lambda: grouped_mm(x, bt, offs))
                        print(f"{base},grouped_bf16,{med:.2f},{lo:.2f},{hi:.2f},"
                              f"{flops / med / 1e6:.1f},{wbytes / med / 1e3:.1f},{err:.2e},", file=out)
                    except Exception as ex:  # noqa: BLE001 - record and go on
                        print(f"{base},grouped_bf16,,,,,,,{type(ex).__name__}: {str(ex)[:80]!r}", file=out)
                    # FP8 grouped, row-wise scales
                    try:
                        if w8 is None:
                            raise RuntimeError(fp8_err)
                        x8, sx = fp8_rowwise(x)
                        b8 = w8.transpose(-2, -1)
                        f8 = lambda: torch._scaled_grouped_mm(x8, b8, sx, sw, offs=offs,
                                                              out_dtype=torch.bfloat16)
                        y8 = f8()
                        deq = dequant(x8, sx)
                        err, ok = check(y8, deq, wdq1 if proj == "gate_up" else wdq2, counts,
                                        f"{name} {proj} fp8 T={T}")
                        failures += not ok
                        med, lo, hi = timer.median_us(f8)
                        print(f"{base},grouped_fp8,{med:.2f},{lo:.2f},{hi:.2f},"
                              f"{flops / med / 1e6:.1f},{wbytes / 2 / med / 1e3:.1f},{err:.2e},", file=out)
                    except Exception as ex:  # noqa: BLE001
                        print(f"{base},grouped_fp8,,,,,,,{type(ex).__name__}: {str(ex)[:80]!r}", file=out)
                    # dense at the same rows, one expert's weights
                    w0t = w[0].t()
                    med, lo, hi = timer.median_us(lambda: torch.matmul(x, w0t))
                    print(f"{base},dense_bf16,{med:.2f},{lo:.2f},{hi:.2f},"
                          f"{flops / med / 1e6:.1f},{n * k * 2.0 / med / 1e3:.1f},,", file=out)
                    try:
                        if w8 is None:
                            raise RuntimeError(fp8_err)
                        x8, sx = fp8_rowwise(x)
                        w08t = w8[0].t()
                        sa, sb = sx[:, None].contiguous(), sw[0][None, :].contiguous()
                        d8 = lambda: torch._scaled_mm(x8, w08t, scale_a=sa, scale_b=sb,
                                                      out_dtype=torch.bfloat16)
                        d8()
                        med, lo, hi = timer.median_us(d8)
                        print(f"{base},dense_fp8,{med:.2f},{lo:.2f},{hi:.2f},"
                              f"{flops / med / 1e6:.1f},{n * k / med / 1e3:.1f},,", file=out)
                    except Exception as ex:  # noqa: BLE001
                        print(f"{base},dense_fp8,,,,,,,{type(ex).__name__}: {str(ex)[:80]!r}", file=out)
                # the whole routed-expert layer (bf16), in a CUDA graph; one GPU's whole layer
                # (EP > 1 needs the all-to-all between ranks: not timed here)
                if layout == "ep" and deg > 1:
                    continue
                xt = torch.randn(T, h, device=DEV, dtype=torch.bfloat16, generator=gen)
                b1, b2 = w1.transpose(-2, -1), w2.transpose(-2, -1)
                ar = torch.arange(xt.shape[0], device=DEV).repeat_interleave(top_k)

                def layer():
                    logits = xt @ wr.t()
                    p = torch.softmax(logits.float(), dim=1)
                    wts, eid = p.topk(top_k, dim=1)
                    eid = eid.flatten()
                    keep = eid < local  # this GPU's experts
                    key = torch.where(keep, eid, local)  # others sort last, rows unused
                    order = torch.argsort(key, stable=True)
                    cnt = torch.zeros(local + 1, dtype=torch.int32, device=DEV)
                    cnt.index_add_(0, key, torch.ones_like(key, dtype=torch.int32))
                    o = torch.cumsum(cnt[:local], 0).to(torch.int32)
                    xs = xt[ar[order]]
                    g = grouped_mm(xs, b1, o)
                    a = torch.nn.functional.silu(g[:, :fl]) * g[:, fl:]
                    d = grouped_mm(a, b2, o)
                    d = d * (wts.flatten()[order] * keep[order])[:, None].to(d.dtype)
                    res = torch.zeros_like(xt)
                    res.index_add_(0, ar[order], d)
                    return res

                note = "graph"
                try:
                    layer()
                    torch.cuda.synchronize()
                    if DEV == "cpu":
                        raise RuntimeError("no CUDA graphs on the CPU")
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        layer()
                    torch.cuda.current_stream().wait_stream(s)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        layer()
                    fn = g.replay
                except Exception as ex:  # noqa: BLE001
                    note = f"eager ({type(ex).__name__})"
                    fn = layer
                try:
                    med, lo, hi = timer.median_us(fn)
                    print(f"{name},{layout},{deg},{local},{T},{R},{hit},{mx},{h},{fl},"
                          f"layer_bf16,{med:.2f},{lo:.2f},{hi:.2f},,,,{note}", file=out)
                except Exception as ex:  # noqa: BLE001
                    print(f"{name},{layout},{deg},{local},{T},{R},{hit},{mx},{h},{fl},"
                          f"layer_bf16,,,,,,,{type(ex).__name__}: {str(ex)[:80]!r}", file=out)
                out.flush()
            del w1, w2, w1_8, w2_8, wdq1, wdq2
            torch.cuda.empty_cache()
    if failures:
        print(f"moe_grouped_torch: {failures} checks failed", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
