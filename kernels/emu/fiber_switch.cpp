// The emulator's fiber switch on x86-64 (declared in emu.h): saves the callee-saved
// registers, MXCSR and the x87 control word on the current stack, stores the stack pointer
// in *save and continues on the stack `to`. swapcontext does the same and also saves and
// restores the signal mask with a system call on every switch, which was half of the
// emulated kernel tests' time; the emulator never changes the signal mask, so it is left out.
#if defined(__x86_64__) && defined(__linux__)
asm(R"(
  .text
  .globl fk_emu_switch
  .type fk_emu_switch,@function
fk_emu_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size fk_emu_switch, .-fk_emu_switch
  .section .note.GNU-stack,"",@progbits
)");
#endif
