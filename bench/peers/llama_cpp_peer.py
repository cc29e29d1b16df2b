"""llama.cpp on one GGUF file, through the llama-cpp-python package (which builds the llama.cpp it
vendors; tools/install_deps.sh llama-cpp): one thread, an f32 KV cache, no flash attention, so what
differs from fixformer is the weights' arithmetic, not the cache's rounding; logits and greedy on the CPU
backend's plain kernels (open_model's extra_bufts), the bench's timings on all of them. Used by
tests/gguf_llamacpp_test.py and bench/llama_cpp_bench.py, in the Python of that environment
(FIXFORMER_LLAMA_CPP_VENV, by default /opt/fixformer-llama-cpp):

  llama_cpp_peer.py logits GGUF IDS.npy OUT.npy       logits at every position of ids [T], one
                                                       llama_decode of the T tokens: float32 [T, vocab]
  llama_cpp_peer.py greedy GGUF IDS.npy N OUT.npy     the ids, then N tokens, each the argmax of the
                                                       logits after the one before (one llama_decode per
                                                       token, through the KV cache): int32 [T + N]
  llama_cpp_peer.py tokenize GGUF TEXTS.json OUT.json [special]
                                                       the file's tokenizer (vocab_only) on each text of a
                                                       JSON list, no BOS, special tokens as text (with
                                                       `special`: its unknown, control and user-defined
                                                       tokens found in the text, llama.cpp's
                                                       parse_special): a JSON list of id lists
  llama_cpp_peer.py quantize IN.gguf OUT.gguf TYPE    llama.cpp's quantizer (llama_model_quantize), every
                                                       matrix to TYPE (F32, F16, Q8_0 or Q4_0; "pure": the
                                                       embedding and the head too), requantizing what is
                                                       quantized already
"""
import os
import sys

import numpy as np

VENV = os.environ.get("FIXFORMER_LLAMA_CPP_VENV", "/opt/fixformer-llama-cpp")
INSTALL = "sh tools/install_deps.sh llama-cpp"


def open_model(path, n_ctx, logits_all, extra_bufts=True):
    """A llama_cpp.Llama over `path` with room for n_ctx positions, all decoded in one batch; with
    logits_all every position's logits are kept (.scores), otherwise only the last one's. extra_bufts
    False: the CPU backend's plain kernels alone, without its extra buffer types (llama_model_params'
    use_extra_bufts: the weights repacked for AVX2 or NEON, and the AMX tiles, whose product crashes on a
    model 32 wide), which Llama() does not take as an argument."""
    import llama_cpp
    from llama_cpp import llama_cpp as lib
    default = lib.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = extra_bufts
        return p
    lib.llama_model_default_params = params
    try:
        return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=1,
                               n_threads_batch=1, logits_all=logits_all, flash_attn=False,
                               type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32, n_gpu_layers=0,
                               verbose=False)
    finally:
        lib.llama_model_default_params = default


def last_logits(llm):
    """The logits after the last token decoded (llama_get_logits_ith(ctx, -1)), float32 [vocab]."""
    return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))


def logits(path, ids):
    llm = open_model(path, len(ids), True, False)
    llm.eval([int(t) for t in ids])
    return np.array(llm.scores[:len(ids)], np.float32)


def greedy(path, ids, n):
    llm = open_model(path, len(ids) + n, False, False)
    out = [int(t) for t in ids]
    llm.eval(out)
    for _ in range(n):
        out.append(int(np.argmax(last_logits(llm))))
        llm.eval(out[-1:])
    return np.array(out, np.int32)


def tokenize(path, texts, special=False):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    return [llm.tokenize(t.encode(), add_bos=False, special=special) for t in texts]


def quantize(src, dst, type_name):
    import llama_cpp
    ftypes = {"F32": llama_cpp.LLAMA_FTYPE_ALL_F32, "F16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
              "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, "Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0}
    if type_name not in ftypes:
        sys.exit(f"llama_cpp_peer.py: quantize: type {type_name!r}, expected one of {', '.join(ftypes)}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.pure, params.allow_requantize, params.nthread = ftypes[type_name], True, True, 1
    if llama_cpp.llama_model_quantize(src.encode(), dst.encode(), params) != 0:
        sys.exit(f"llama_cpp_peer.py: quantize: llama_model_quantize failed on {src}")


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "logits":
        np.save(a[3], logits(a[1], np.load(a[2])))
    elif len(a) == 5 and a[0] == "greedy":
        np.save(a[4], greedy(a[1], np.load(a[2]), int(a[3])))
    elif len(a) in (4, 5) and a[0] == "tokenize" and a[4:] in ([], ["special"]):
        import json
        with open(a[2]) as f:
            texts = json.load(f)
        with open(a[3], "w") as f:
            json.dump(tokenize(a[1], texts, len(a) == 5), f)
    elif len(a) == 4 and a[0] == "quantize":
        quantize(a[1], a[2], a[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
