// kernels/cuda/util.cu compiled for the host emulator (emu.h); needs the fake runtime
// (fake_cudart.cpp) for its cudaMemsetAsync/cudaMemcpyAsync calls.
#define FK_EMULATE 1
#include "kernels/cuda/util.cu"
