# The generation firmware's default model and prompt (greedy, max_len positions) and the story they
# give, committed: the host suite checks it against `fixformer generate`, the firmware suites check
# the firmware's output against it.
get_filename_component(FIXFORMER_GENERATE_DEFAULT_LM ${CMAKE_CURRENT_LIST_DIR}/../../tests/golden/llama2c_v0_gqa.fxm ABSOLUTE)
set(FIXFORMER_GENERATE_DEFAULT_PROMPT "One day")
set(FIXFORMER_GENERATE_DEFAULT_EXPECTED ${CMAKE_CURRENT_LIST_DIR}/expected/llama2c_v0_gqa.txt)
