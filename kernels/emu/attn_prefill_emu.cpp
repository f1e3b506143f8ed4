// kernels/cuda/attn_prefill.cu compiled for the host emulator (emu.h): the same source, run on the
// CPU by the emulation tests.
#define FK_EMULATE 1
#include "kernels/cuda/attn_prefill.cu"
