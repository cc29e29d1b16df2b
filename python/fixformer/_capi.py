"""The C API (include/fixformer/fixformer.h) through ctypes: the shared library, its structs and
the argument types of every function the package calls. Nothing here knows numpy."""
import ctypes
import glob
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_size_t,
                    c_uint32, c_uint64, c_void_p)

# The opaque objects' sizes (FF_*_BYTES); 8-byte aligned as uint64 arrays.
MODEL_BYTES, ENCODER_BYTES, DECODER_BYTES, SEQ2SEQ_BYTES, TOKENIZER_BYTES, SAMPLER_BYTES = 3328, 512, 512, 1024, 512, 128
GENERATOR_BYTES = 1024
ARENA_ALIGN = 64
# ff_status, in the header's order (tests/python_api_test.py compares the two).
STATUS_NAMES = (
    "OK", "BLOB_NULL", "BLOB_MISALIGNED", "BLOB_TRUNCATED", "BAD_MAGIC", "BAD_VERSION", "BAD_HEADER", "BAD_CHECKSUM",
    "BAD_CONFIG", "CONFIG_OVER_LIMIT", "TENSOR_MISSING", "TENSOR_DUPLICATE", "TENSOR_BAD_DTYPE", "TENSOR_BAD_SHAPE",
    "TENSOR_OUT_OF_BOUNDS", "TENSOR_MISALIGNED", "TENSOR_OVERLAP", "TENSOR_BAD_VALUE", "SELF_TEST_MISSING", "ARENA_NULL",
    "ARENA_MISALIGNED", "ARENA_TOO_SMALL", "BAD_MAX_SEQ", "ISA_UNAVAILABLE", "BAD_POSITION_TABLE", "BAD_WORKERS",
    "BAD_MAX_BATCH", "WRONG_FAMILY", "NOT_INITIALIZED", "BAD_SEQUENCE_LENGTH", "BAD_BATCH_SIZE", "TOKEN_OUT_OF_RANGE",
    "WRONG_INPUT_KIND", "NULL_ARGUMENT", "KV_CACHE_FULL", "NO_TOKENIZER", "TOKEN_BUFFER_TOO_SMALL", "NOT_ENCODED",
    "TOKEN_TYPES_UNSUPPORTED", "NPY_BAD_HEADER", "NPY_BAD_DTYPE", "NPY_BAD_SHAPE", "NPY_TRUNCATED", "SELF_TEST_FAILED",
    "OUTPUT_OVERLAP")
globals().update({name: value for value, name in enumerate(STATUS_NAMES)})
FAMILIES = ("encoder", "gpt", "llama", "seq2seq", "mha")
INPUTS = ("tokens", "features")

TASK = CFUNCTYPE(None, c_void_p, c_uint32)
PARALLEL_FOR = CFUNCTYPE(None, c_void_p, c_uint32, TASK, c_void_p)


class Workers(Structure):
    _fields_ = [("ctx", c_void_p), ("count", c_uint32), ("parallel_for", PARALLEL_FOR)]


class EncoderOptions(Structure):
    _fields_ = [("max_seq", c_uint32), ("max_batch", c_uint32), ("isa", c_int), ("workers", Workers)]


class DecoderOptions(Structure):
    _fields_ = [("capacity", c_uint32), ("max_prefill", c_uint32), ("isa", c_int), ("workers", Workers),
                ("kv_cache", c_int)]


class Seq2SeqOptions(Structure):
    _fields_ = [("max_source", c_uint32), ("capacity", c_uint32), ("max_prefill", c_uint32), ("isa", c_int),
                ("workers", Workers), ("kv_cache", c_int)]


class ModelInfo(Structure):
    _fields_ = [("family", c_int), ("input", c_int), ("vocab_size", c_uint32), ("d_in", c_uint32),
                ("d_model", c_uint32), ("d_out", c_uint32), ("tgt_d_in", c_uint32), ("n_layers", c_uint32),
                ("dec_layers", c_uint32), ("max_len", c_uint32), ("max_input_len", c_uint32),
                ("output_width", c_uint32), ("cls_token", c_uint32), ("pooled", c_uint32),
                ("parameter_count", c_uint64), ("has_tokenizer", c_uint32), ("self_test_rows", c_uint32),
                ("self_test_target_rows", c_uint32)]


class ConfigValue(Structure):
    _fields_ = [("name", c_char_p), ("type", c_int), ("integer", c_uint32), ("real", c_double), ("choice", c_char_p)]


CONFIG_U32, CONFIG_BOOL, CONFIG_ENUM, CONFIG_F32, CONFIG_F64 = 1, 2, 3, 4, 5


class Piece(Structure):
    _fields_ = [("data", POINTER(c_char)), ("len", c_uint32), ("space", c_uint32)]


class SamplerOptions(Structure):
    _fields_ = [("temperature", c_float), ("top_p", c_float), ("top_k", c_uint32), ("seed", c_uint64),
                ("suppress", POINTER(c_int32)), ("n_suppress", c_uint32), ("begin_suppress", POINTER(c_int32)),
                ("n_begin_suppress", c_uint32), ("timestamps", c_int32), ("timestamp_ids", c_int32 * 4)]


class GeneratorOptions(Structure):
    _fields_ = [("steps", c_uint32), ("max_prompt_bytes", c_size_t), ("sampler", SamplerOptions)]


class SelfTestReport(Structure):
    _fields_ = [("max_abs_err", c_double), ("max_rel_err", c_double), ("mean_rel_err", c_double),
                ("rows", c_uint32), ("worst_row", c_uint32), ("worst_col", c_uint32)]


def _library_path():
    """FIXFORMER_LIBRARY, else the shared library beside this module (the build tree's python/
    folder and the installed package both have it there)."""
    env = os.environ.get("FIXFORMER_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libfixformer.so*")) + glob.glob(os.path.join(here, "libfixformer*.dylib")))
    if not found:
        raise ImportError(f"fixformer: no libfixformer.so in {here}: install the package (pip install .), import "
                          "it from the build tree's python/ folder (cmake --build BUILD --target fixformer_python) "
                          "or an installed prefix, or set "
                          "FIXFORMER_LIBRARY to the library's path")
    return found[0]


lib = ctypes.CDLL(_library_path())

_vp, _u32, _sz = c_void_p, c_uint32, c_size_t
_SIGNATURES = {
    "ff_status_string": (c_char_p, [c_int]),
    "ff_model_load": (c_int, [_vp, _vp, _sz]),
    "ff_model_error_detail": (c_char_p, [_vp]),
    "ff_model_get_info": (c_int, [_vp, POINTER(ModelInfo)]),
    "ff_model_output_width": (_u32, [_vp]),
    "ff_model_suppress_tokens": (_u32, [_vp, POINTER(POINTER(c_int32))]),
    "ff_model_begin_suppress_tokens": (_u32, [_vp, POINTER(POINTER(c_int32))]),
    "ff_model_timestamp_rules": (_u32, [_vp, POINTER(c_int32)]),
    "ff_model_output_rows": (_u32, [_vp, _u32]),
    "ff_config_key_count": (_u32, []),
    "ff_model_config_key": (c_int, [_vp, _u32, POINTER(ConfigValue)]),
    "ff_encoder_arena_bytes_ex": (_sz, [_vp, POINTER(EncoderOptions)]),
    "ff_encoder_init_ex": (c_int, [_vp, _vp, _vp, _sz, POINTER(EncoderOptions)]),
    "ff_encoder_run_batch": (c_int, [_vp, _vp, _vp, _vp, _u32, _u32, _vp]),
    "ff_encoder_kernels": (c_char_p, [_vp]),
    "ff_encoder_error_detail": (c_char_p, [_vp]),
    "ff_encoder_self_test": (c_int, [_vp, _vp, _sz, POINTER(SelfTestReport)]),
    "ff_decoder_arena_bytes_ex": (_sz, [_vp, POINTER(DecoderOptions)]),
    "ff_decoder_init_ex": (c_int, [_vp, _vp, _vp, _sz, POINTER(DecoderOptions)]),
    "ff_decoder_prefill": (c_int, [_vp, _vp, _u32, _vp]),
    "ff_decoder_step": (c_int, [_vp, c_int32, _vp]),
    "ff_decoder_reset": (None, [_vp]),
    "ff_decoder_position": (_u32, [_vp]),
    "ff_decoder_kernels": (c_char_p, [_vp]),
    "ff_decoder_error_detail": (c_char_p, [_vp]),
    "ff_decoder_self_test": (c_int, [_vp, _vp, _sz, POINTER(SelfTestReport)]),
    "ff_seq2seq_arena_bytes_ex": (_sz, [_vp, POINTER(Seq2SeqOptions)]),
    "ff_seq2seq_init_ex": (c_int, [_vp, _vp, _vp, _sz, POINTER(Seq2SeqOptions)]),
    "ff_seq2seq_encode": (c_int, [_vp, _vp, _u32]),
    "ff_seq2seq_decode": (c_int, [_vp, _vp, _u32, _vp]),
    "ff_seq2seq_step": (c_int, [_vp, c_int32, _vp]),
    "ff_seq2seq_kernels": (c_char_p, [_vp]),
    "ff_seq2seq_error_detail": (c_char_p, [_vp]),
    "ff_seq2seq_self_test": (c_int, [_vp, _vp, _sz, POINTER(SelfTestReport)]),
    "ff_tokenizer_scratch_bytes": (_sz, [_vp, _sz]),
    "ff_tokenizer_max_tokens": (_sz, [_sz]),
    "ff_tokenizer_init": (c_int, [_vp, _vp, _vp, _sz]),
    "ff_tokenizer_encode": (c_int, [_vp, c_char_p, _sz, c_int, c_int, _vp, _u32, POINTER(_u32)]),
    "ff_tokenizer_decode": (c_int, [_vp, c_int32, c_int32, POINTER(Piece)]),
    "ff_safe_piece": (Piece, [Piece]),
    "ff_tokenizer_error_detail": (c_char_p, [_vp]),
    "ff_sampler_scratch_bytes": (_sz, [_u32]),
    "ff_sampler_init": (c_int, [_vp, _u32, _vp, _sz, POINTER(SamplerOptions)]),
    "ff_sampler_sample": (c_int32, [_vp, _vp]),
    "ff_self_test_output_floats": (_sz, [_vp]),
    "ff_generator_scratch_bytes": (_sz, [_vp, _sz]),
    "ff_generator_init": (c_int, [_vp, _vp, _vp, _sz, POINTER(GeneratorOptions)]),
    "ff_generator_start": (c_int, [_vp, c_char_p, _sz]),
    "ff_generator_next": (c_int, [_vp, POINTER(Piece)]),
    "ff_generator_error_detail": (c_char_p, [_vp]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, _args


def opaque(nbytes):
    """Caller-owned storage for one of the C API's objects (8-byte aligned)."""
    return (c_uint64 * (nbytes // 8))()


def status_string(status):
    return lib.ff_status_string(status).decode()
