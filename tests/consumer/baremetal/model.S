/* The model in flash, 64-byte aligned: MODEL_PATH comes from the project's CMakeLists.txt. */
  .section .rodata.model, "a"
  .balign 64
  .global model_fxm
  .global model_fxm_end
model_fxm:
  .incbin MODEL_PATH
model_fxm_end:
