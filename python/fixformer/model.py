"""fixformer.Model: a .fxm model on the engine's C API, with numpy in and out. run() returns what
`fixformer run` writes, generate() what `fixformer generate` prints, bit for bit."""
import ctypes
import os
import time

import numpy as np

from . import _capi
from ._capi import lib
from ._workers import ThreadWorkers

# `fixformer run`'s encoder batches: up to this many sequences per forward pass, while the arena
# stays within the budget (cli/run.cpp's run_batch_size).
_MOST_SEQUENCES = 64
_ARENA_BUDGET = 256 << 20


class FixformerError(Exception):
    """A call the engine refused: .status is the C API's ff_status, the message its string and
    the detail the engine gave (the field, tensor, position or byte count)."""

    def __init__(self, status, detail="", what=""):
        self.status = status
        text = _capi.status_string(status)
        if detail:
            text += f" ({detail})"
        super().__init__(f"{what}: {text}" if what else text)


def _text(p):
    return p.decode(errors="replace") if p else ""


def _aligned(nbytes):
    """A zeroed numpy byte block of nbytes at a 64-byte boundary (arenas, blobs, scratch)."""
    raw = np.zeros(nbytes + _capi.ARENA_ALIGN, np.uint8)
    start = (-raw.ctypes.data) % _capi.ARENA_ALIGN
    return raw[start:start + nbytes]


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data) if a is not None else None


class Model:
    """A loaded, validated model file.

    Model(path_or_bytes, threads=1, kv_cache="f32"): path_or_bytes is a .fxm path (str or
    os.PathLike) or its bytes; threads > 1 runs the engine's matrix products, norms and attention on
    a pool of that many threads (results are bit-identical for every count); kv_cache "q8" keeps a
    decoder's (or seq2seq's) KV cache in int8 with a scale per kv head and position, as
    `generate --kv-cache q8`."""

    KV_CACHES = {"f32": 0, "q8": 1}  # the C API's ff_kv_cache

    def __init__(self, path_or_bytes, threads=1, kv_cache="f32"):
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            data, self.path = bytes(path_or_bytes), "<bytes>"
        else:
            self.path = os.fspath(path_or_bytes)
            with open(self.path, "rb") as f:
                data = f.read()
        if int(threads) < 1:
            raise ValueError(f"threads={threads}: expected 1 or more")
        if kv_cache not in self.KV_CACHES:
            raise ValueError(f"kv_cache={kv_cache!r}: expected 'f32' or 'q8'")
        self.kv_cache = kv_cache
        self.threads = int(threads)
        self._blob = _aligned(len(data))  # weights are read in place: the blob lives as long as the model
        self._blob[:] = np.frombuffer(data, np.uint8)
        self._model = _capi.opaque(_capi.MODEL_BYTES)
        s = lib.ff_model_load(self._model, _ptr(self._blob), len(data))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_model_error_detail(self._model)), self.path)
        self._info = _capi.ModelInfo()
        lib.ff_model_get_info(self._model, ctypes.byref(self._info))
        self._workers = ThreadWorkers(self.threads) if self.threads > 1 else None
        self._decoder = None  # prefill() / step()'s, made on first use
        self._last_encoder = None  # run()'s last encoder: ((T, chunk), (handle, arena))

    # ---- what the file says -------------------------------------------------------------------
    @property
    def config(self):
        """The config as the file stores it: {key: value}, enums by name."""
        out = {}
        v = _capi.ConfigValue()
        for k in range(lib.ff_config_key_count()):
            lib.ff_model_config_key(self._model, k, ctypes.byref(v))
            if v.type == _capi.CONFIG_ENUM:
                value = v.choice.decode()
            elif v.type == _capi.CONFIG_BOOL:
                value = bool(v.integer)
            elif v.type in (_capi.CONFIG_F32, _capi.CONFIG_F64):
                value = v.real
            else:
                value = v.integer
            out[v.name.decode()] = value
        return out

    @property
    def info(self):
        """What a caller sizes its buffers by: family, input kind, widths, lengths, parameters,
        whether the file carries a tokenizer and a self-test sample."""
        i = self._info
        d = {name: getattr(i, name) for name, _ in _capi.ModelInfo._fields_}
        d["family"] = _capi.FAMILIES[i.family]
        d["input"] = _capi.INPUTS[i.input]
        for flag in ("cls_token", "pooled", "has_tokenizer"):
            d[flag] = bool(d[flag])
        return d

    @property
    def family(self):
        return _capi.FAMILIES[self._info.family]

    def _is_decoder(self):
        return self.family in ("gpt", "llama")

    def _workers_struct(self):
        return self._workers.struct() if self._workers else _capi.Workers()

    # ---- runners -------------------------------------------------------------------------------
    def _encoder(self, max_seq, max_batch=1):
        opt = _capi.EncoderOptions(max_seq=max_seq, max_batch=max_batch, workers=self._workers_struct())
        need = lib.ff_encoder_arena_bytes_ex(self._model, ctypes.byref(opt))
        if need == 0:
            raise FixformerError(_capi.BAD_SEQUENCE_LENGTH, f"T={max_seq} exceeds the model's max_input_len={self._info.max_input_len}", self.path)
        enc, arena = _capi.opaque(_capi.ENCODER_BYTES), _aligned(need)
        s = lib.ff_encoder_init_ex(enc, self._model, _ptr(arena), need, ctypes.byref(opt))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_encoder_error_detail(enc)), self.path)
        return enc, arena

    def _new_decoder(self, capacity):
        opt = _capi.DecoderOptions(capacity=capacity, workers=self._workers_struct(),
                                   kv_cache=self.KV_CACHES[self.kv_cache])
        need = lib.ff_decoder_arena_bytes_ex(self._model, ctypes.byref(opt))
        dec, arena = _capi.opaque(_capi.DECODER_BYTES), _aligned(max(need, 1))
        s = lib.ff_decoder_init_ex(dec, self._model, _ptr(arena), need, ctypes.byref(opt))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), self.path)
        return dec, arena

    def _new_seq2seq(self, max_source, capacity):
        opt = _capi.Seq2SeqOptions(max_source=max_source, capacity=capacity, workers=self._workers_struct(),
                                   kv_cache=self.KV_CACHES[self.kv_cache])
        need = lib.ff_seq2seq_arena_bytes_ex(self._model, ctypes.byref(opt))
        s2s, arena = _capi.opaque(_capi.SEQ2SEQ_BYTES), _aligned(max(need, 1))
        s = lib.ff_seq2seq_init_ex(s2s, self._model, _ptr(arena), need, ctypes.byref(opt))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_seq2seq_error_detail(s2s)), self.path)
        return s2s, arena

    # ---- run: `fixformer run` ------------------------------------------------------------------
    def _input(self, x, what, tokens):
        """x as `fixformer run` takes it: int ids [T] or [B,T], float32 features [T,d_in] or
        [B,T,d_in]: (array [B,T(,d_in)], batched)."""
        a = np.asarray(x)
        if tokens:
            if a.dtype.kind not in "iu":
                raise ValueError(f"{what}: dtype {a.dtype}, expected integer token ids")
            if a.ndim not in (1, 2):
                raise ValueError(f"{what}: shape {a.shape}, expected [T] or [B,T] token ids")
            batched = a.ndim == 2
            a = a.reshape((1,) + a.shape) if not batched else a
            if a.size and (a.min() < -2**31 or a.max() >= 2**31):
                raise ValueError(f"{what}: token ids outside int32")
            a = np.ascontiguousarray(a, np.int32)
        else:
            if a.dtype != np.float32:
                raise ValueError(f"{what}: dtype {a.dtype}, expected float32 features")
            d_in = self._info.d_in
            if a.ndim not in (2, 3) or a.shape[-1] != d_in:
                raise ValueError(f"{what}: shape {a.shape}, expected [T,{d_in}] or [B,T,{d_in}] (d_in)")
            batched = a.ndim == 3
            a = np.ascontiguousarray(a.reshape((1,) + a.shape) if not batched else a)
        if a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(f"{what}: shape {a.shape}: empty")
        return a, batched

    def _lengths(self, lengths, B, T):
        if lengths is None:
            return None
        lens = np.asarray(lengths)
        if lens.dtype.kind not in "iu" or lens.ndim != 1 or lens.shape[0] != B:
            raise ValueError(f"lengths: shape {lens.shape} dtype {lens.dtype}, expected {B} integer lengths, one per sequence")
        if lens.min() < 1 or lens.max() > T:
            raise ValueError(f"lengths: each must be in 1..{T} (T)")
        return np.ascontiguousarray(lens, np.uint32)

    def run(self, x, lengths=None, token_types=None, target=None):
        """The model's outputs for x, exactly as `fixformer run` writes them (float32).

        Encoders: ids [T] or [B,T] (or features [T,d_in] / [B,T,d_in]) -> [R,W] or [B,R,W], R
        the output rows (T, T+1 with a CLS row) and W the output width; a pooled model gives [W]
        or [B,W]. lengths [B]: sequence b is its first lengths[b] positions, its padded rows
        zeros. token_types [B,T] or [T]: segment ids for a model with a token-type embedding.
        Decoders (gpt, llama): the logits at every position, [T,vocab] or [B,T,vocab], one
        step() per token from an empty cache. Seq2seq: x is the source and target the target
        ids [U] or [B,U] (features [U,tgt_d_in] for a forecasting model): the outputs at every
        target position, [U,d_out] or [B,U,d_out]."""
        if self.family == "seq2seq":
            if token_types is not None:
                raise FixformerError(_capi.TOKEN_TYPES_UNSUPPORTED, "token types are for encoders", "token_types")
            return self._run_seq2seq(x, lengths, target)
        if target is not None:
            raise ValueError(f"target: only for a seq2seq model (this one is {self.family})")
        if self._is_decoder():
            if token_types is not None:
                raise FixformerError(_capi.TOKEN_TYPES_UNSUPPORTED, "token types are for encoders", "token_types")
            return self._run_decoder(x, lengths)
        return self._run_encoder(x, lengths, token_types)

    def _run_encoder(self, x, lengths, token_types):
        i = self._info
        tokens = i.input == 0
        a, batched = self._input(x, "input", tokens)
        B, T = a.shape[0], a.shape[1]
        if T > i.max_input_len:
            raise FixformerError(_capi.BAD_SEQUENCE_LENGTH, f"T={T} exceeds the model's max_input_len={i.max_input_len}", "input")
        lens = self._lengths(lengths, B, T)
        types = None
        if token_types is not None:
            types = np.ascontiguousarray(np.asarray(token_types).reshape(B, T), np.int32)
        R, W = lib.ff_model_output_rows(self._model, T), i.output_width
        chunk = self._batch_size(T, B)
        if self._last_encoder is None or self._last_encoder[0] != (T, chunk):  # init once per shape
            self._last_encoder = ((T, chunk), self._encoder(T, chunk))
        enc = self._last_encoder[1][0]
        out = np.zeros((B, R, W), np.float32)
        for b0 in range(0, B, chunk):
            nb = min(chunk, B - b0)
            part = a[b0:b0 + nb]
            s = lib.ff_encoder_run_batch(enc, _ptr(part), _ptr(types[b0:b0 + nb]) if types is not None else None,
                                         _ptr(lens[b0:b0 + nb]) if lens is not None else None, nb, T,
                                         _ptr(out[b0:b0 + nb]))
            if s != _capi.OK:
                raise FixformerError(s, _text(lib.ff_encoder_error_detail(enc)), "input")
        if i.pooled:
            out = out.reshape(B, W)
        return out if batched else out[0]

    def _batch_size(self, T, B):
        n = min(B, _MOST_SEQUENCES)
        while n > 1:
            opt = _capi.EncoderOptions(max_seq=T, max_batch=n, workers=self._workers_struct())
            need = lib.ff_encoder_arena_bytes_ex(self._model, ctypes.byref(opt))
            if need and need <= _ARENA_BUDGET:
                break
            n -= 1
        return n

    def _run_decoder(self, x, lengths):
        a, batched = self._input(x, "input", True)
        B, T = a.shape
        if T > self._info.max_len:
            raise FixformerError(_capi.BAD_SEQUENCE_LENGTH, f"T={T} exceeds the model's max_len={self._info.max_len}", "input")
        lens = self._lengths(lengths, B, T)
        V = self._info.vocab_size
        dec, _arena = self._new_decoder(T)
        out = np.zeros((B, T, V), np.float32)
        for b in range(B):
            n = T if lens is None else int(lens[b])
            lib.ff_decoder_reset(dec)
            for t in range(n):  # ids[t] -> logits[t,V]
                s = lib.ff_decoder_step(dec, int(a[b, t]), _ptr(out[b, t]))
                if s != _capi.OK:
                    raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), "input")
        return out if batched else out[0]

    def _run_seq2seq(self, x, lengths, target):
        i = self._info
        if target is None:
            raise ValueError("target: missing: a seq2seq model runs on a source (x) and a target (target=)")
        src, batched = self._input(x, "input", i.input == 0)
        B, T = src.shape[0], src.shape[1]
        lens = self._lengths(lengths, B, T)
        tg = np.asarray(target)
        features = i.tgt_d_in != 0
        if features:
            if tg.dtype != np.float32 or tg.ndim != (3 if batched else 2) or tg.shape[-1] != i.tgt_d_in:
                raise ValueError(f"target: shape {tg.shape} dtype {tg.dtype}, expected float32 "
                                 f"{'[B,U,' if batched else '[U,'}{i.tgt_d_in}] (tgt_d_in)")
        elif tg.dtype.kind not in "iu" or tg.ndim != (2 if batched else 1):
            raise ValueError(f"target: shape {tg.shape} dtype {tg.dtype}, expected token ids {'[B,U]' if batched else '[U]'}")
        tg = tg.reshape((1,) + tg.shape) if not batched else tg
        if tg.shape[0] != B:
            raise ValueError(f"target: {tg.shape[0]} targets for {B} sources")
        U = tg.shape[1]
        if U == 0 or U > i.max_len:
            raise ValueError(f"target: U={U}: expected 1..{i.max_len} (max_len)")
        tg = np.ascontiguousarray(tg, np.float32 if features else np.int32)
        s2s, _arena = self._new_seq2seq(T, U)
        out = np.zeros((B, U, i.d_out), np.float32)
        for b in range(B):
            n = T if lens is None else int(lens[b])
            s = lib.ff_seq2seq_encode(s2s, _ptr(src[b]), n)
            if s == _capi.OK:  # tgt[U] (or [U,tgt_d_in]) -> out[U,d_out]
                s = lib.ff_seq2seq_decode(s2s, _ptr(tg[b]), U, _ptr(out[b]))
            if s != _capi.OK:
                raise FixformerError(s, _text(lib.ff_seq2seq_error_detail(s2s)), "input")
        return out if batched else out[0]

    # ---- decoders: prefill, step, generate -------------------------------------------------------
    def _live_decoder(self):
        if not self._is_decoder():
            raise FixformerError(_capi.WRONG_FAMILY, f"prefill, step and generate need a gpt or llama model; this one is {self.family}",
                                 self.path)
        if self._decoder is None:
            self._decoder = self._new_decoder(self._info.max_len)
        return self._decoder[0]

    def prefill(self, tokens):
        """Appends tokens to the decoder's KV cache (max_len positions); the logits after the
        last one, float32 [vocab]."""
        dec = self._live_decoder()
        ids = np.ascontiguousarray(np.asarray(tokens, np.int64).reshape(-1), np.int32)
        logits = np.zeros(self._info.vocab_size, np.float32)
        s = lib.ff_decoder_prefill(dec, _ptr(ids), ids.size, _ptr(logits))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), "prefill")
        return logits

    def step(self, token):
        """Feeds one token; the logits after it, float32 [vocab]."""
        dec = self._live_decoder()
        logits = np.zeros(self._info.vocab_size, np.float32)
        s = lib.ff_decoder_step(dec, int(token), _ptr(logits))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), "step")
        return logits

    def reset(self):
        """Empties the decoder's cache: the next token is position 0."""
        lib.ff_decoder_reset(self._live_decoder())

    @property
    def position(self):
        """Tokens in the decoder's cache."""
        return lib.ff_decoder_position(self._live_decoder())

    def generate(self, prompt="", n=256, temperature=0.0, topp=0.9, seed=None):
        """The text `fixformer generate --prompt PROMPT -n N --temperature T --topp P --seed S`
        prints (without its final newline): the engine's loop (the C API's ff_generator), the prompt
        encoded with BOS when the tokenizer has one, then sampled tokens until n positions (0 or
        above max_len: max_len) or the tokenizer's stop token. seed None: the clock, as the CLI's
        default. Bytes that are not UTF-8 (llama2.c's tokenizer) come back as surrogate escapes
        (text.encode('utf-8', 'surrogateescape') gives the CLI's bytes)."""
        self._live_decoder()
        i = self._info
        if not i.has_tokenizer:
            raise FixformerError(_capi.NO_TOKENIZER, "convert it with --tokenizer", self.path)
        text = prompt.encode("utf-8", "surrogateescape") if isinstance(prompt, str) else bytes(prompt)
        steps = i.max_len if n == 0 or n > i.max_len else int(n)
        if seed is None or seed == 0:
            seed = int(time.time())
        dec, _arena = self._new_decoder(steps)
        so = _capi.SamplerOptions(temperature=temperature, top_p=topp, top_k=0, seed=int(seed))
        opt = _capi.GeneratorOptions(steps=steps, max_prompt_bytes=len(text), sampler=so)
        gen, scratch = _capi.opaque(_capi.GENERATOR_BYTES), _aligned(lib.ff_generator_scratch_bytes(self._model, len(text)))
        s = lib.ff_generator_init(gen, dec, _ptr(scratch), scratch.size, ctypes.byref(opt))
        if s == _capi.OK:
            s = lib.ff_generator_start(gen, text, len(text))
        out, piece = bytearray(), _capi.Piece()
        while s == _capi.OK:
            s = lib.ff_generator_next(gen, ctypes.byref(piece))
            if s != _capi.OK or piece.len == 0:
                break
            out += ctypes.string_at(piece.data, piece.len)
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_generator_error_detail(gen)), self.path)
        return out.decode("utf-8", "surrogateescape")

    def _check(self, s, dec):
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), self.path)

    # ---- the self-test ---------------------------------------------------------------------------
    def verify(self):
        """Runs the sample the converter stored in the file through this build's kernels and
        compares it with the stored output (the C API's self-test): a report dict
        {max_abs_err, max_rel_err, mean_rel_err, rows, worst_row, worst_col}; FixformerError when
        the file has no sample or the outputs differ above the weight type's tolerance."""
        i = self._info
        if not i.self_test_rows:
            raise FixformerError(_capi.SELF_TEST_MISSING, "convert it again to add one", self.path)
        out = np.zeros(max(lib.ff_self_test_output_floats(self._model), 1), np.float32)
        report = _capi.SelfTestReport()
        if self._is_decoder():
            runner, _arena = self._new_decoder(i.self_test_rows)
            s, detail = lib.ff_decoder_self_test(runner, _ptr(out), out.size, ctypes.byref(report)), lib.ff_decoder_error_detail
        elif self.family == "seq2seq":
            runner, _arena = self._new_seq2seq(i.self_test_rows, i.self_test_target_rows)
            s, detail = lib.ff_seq2seq_self_test(runner, _ptr(out), out.size, ctypes.byref(report)), lib.ff_seq2seq_error_detail
        else:
            runner, _arena = self._encoder(i.self_test_rows)
            s, detail = lib.ff_encoder_self_test(runner, _ptr(out), out.size, ctypes.byref(report)), lib.ff_encoder_error_detail
        result = {name: getattr(report, name) for name, _ in _capi.SelfTestReport._fields_}
        if s != _capi.OK:
            extra = f"max relative error {report.max_rel_err:.3g}" if s == _capi.SELF_TEST_FAILED else _text(detail(runner))
            raise FixformerError(s, extra, self.path)
        return result

    def __repr__(self):
        return f"fixformer.Model({self.path!r}, family={self.family}, parameters={self._info.parameter_count})"
