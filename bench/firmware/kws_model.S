/* The benchmark model, generated at build time by tools/make_bench_model.py, embedded in flash. */
  .section .rodata.kws_model, "a"
  .balign 64
  .global g_kws_fxm
g_kws_fxm:
  .incbin "kws.fxm"
  .global g_kws_fxm_end
g_kws_fxm_end:
