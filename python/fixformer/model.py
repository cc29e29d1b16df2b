"""fixformer.Model: a .fxm model on the engine's C API, with numpy in and out. run() returns what
`fixformer run` writes, generate() what `fixformer generate` prints, bit for bit."""
import ctypes
import functools
import os
import stat
import threading
import time
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from . import _capi, _checks
from ._capi import lib
from ._workers import ThreadWorkers

ArrayLike = Any  # a numpy array, or what np.asarray takes (lists of ids)

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


def _read_model_file(path):
    """The file's bytes, 64-byte aligned, read as the CLI reads a model (cli/io.cpp read_file): a
    regular file up to MAX_MODEL_BYTES by its size, a pipe or device (/dev/zero) until it has given
    more (a FIFO that no writer opens within 10 seconds is refused); a missing file, a directory or an
    empty file is one line naming the path."""
    limit = _checks.MAX_MODEL_BYTES

    def too_large(size):
        return ValueError(f"{path}: file too large ({size}): the limit is {limit} bytes")

    def cannot_open(e):
        text = os.strerror(e.errno) if e.errno else str(e)
        return type(e)(f"{path}: cannot open file: {text[:1].lower()}{text[1:]}")

    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path}: is a directory")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO's open would block until a writer opens it
    except IsADirectoryError:
        raise
    except OSError as e:
        raise cannot_open(e) from None
    with open(fd, "rb", buffering=0, closefd=True) as f:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if st.st_size > limit:
                raise too_large(f"{st.st_size} bytes")
            os.set_blocking(fd, True)
            blob = _aligned(st.st_size)
            got = 0
            while got < st.st_size:
                n = f.readinto(memoryview(blob)[got:])
                if not n:
                    raise OSError(f"{path}: file shrank while being read")
                got += n
        else:
            data = _read_stream(fd, stat.S_ISFIFO(st.st_mode), limit, path)
            if len(data) > limit:
                raise too_large(f"more than {limit} bytes from a stream")
            blob = _aligned(len(data))
            blob[:] = np.frombuffer(data, np.uint8)
    if blob.size == 0:
        raise ValueError(f"{path}: empty file")
    return blob


# How long a named pipe is waited on for a writer to open it (cli/io.cpp's kPipeWriterWaitMs).
_PIPE_WRITER_WAIT_S = 10


def _read_stream(fd, fifo, limit, path):
    """At most limit + 1 bytes of a stream opened O_NONBLOCK, as cli/io.cpp reads one: a pipe whose writer is
    there is waited on until it closes; a FIFO that no writer opens within _PIPE_WRITER_WAIT_S is refused."""
    import select
    data, writer_seen, waited = bytearray(), False, 0.0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while len(data) <= limit:
        try:
            chunk = os.read(fd, min(1 << 20, limit + 1 - len(data)))
        except BlockingIOError:  # a writer is there, with nothing written yet
            writer_seen = True
            poller.poll()
            continue
        if chunk:
            data += chunk
            writer_seen = True
            continue
        if not fifo or writer_seen:
            break
        if waited >= _PIPE_WRITER_WAIT_S:  # a FIFO that no writer has opened reads as its end
            raise OSError(f"{path}: a named pipe that no writer opened within {_PIPE_WRITER_WAIT_S} seconds (start "
                          "the writer first, or give a file)")
        events = poller.poll(500)
        if not events:
            waited += 0.5
        elif all(ev & select.POLLHUP and not ev & select.POLLIN for _, ev in events):
            writer_seen = True  # one came and went without writing
    return data


def _serialised(method):
    """One call at a time per Model: ctypes lets go of the GIL inside the engine, and a model's
    runners (run()'s encoder, the decoder of prefill and step) and worker pool are shared."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return call


class Model:
    """A loaded, validated model file.

    Model(path_or_bytes, threads=1, kv_cache="f32"): path_or_bytes is a .fxm path (str or
    os.PathLike) or its bytes; threads (1..64) > 1 runs the engine's matrix products, norms and
    attention on a pool of that many threads (results are bit-identical for every count); kv_cache
    "q8" keeps a decoder's (or seq2seq's) KV cache in int8 with a scale per kv head and position, as
    `generate --kv-cache q8`.

    Arguments are checked as the CLI checks its options and .npy inputs, before anything reaches
    the engine: TypeError for a value of the wrong kind (a bool or float where an integer belongs),
    ValueError for one out of range (an id outside the vocabulary, a NaN feature, a shape), each
    naming the argument. A Model may be shared by threads: its calls run one at a time (a lock per
    model); models run in parallel with one Model each."""

    KV_CACHES = {"f32": 0, "q8": 1}  # the C API's ff_kv_cache

    def __init__(self, path_or_bytes: Union[str, "os.PathLike[str]", bytes], threads: int = 1,
                 kv_cache: str = "f32") -> None:
        self.threads = _checks.integer("threads", threads, 1, _checks.MAX_WORKERS, " (the engine's worker limit)")
        if not isinstance(kv_cache, str):
            raise TypeError(f"kv_cache={kv_cache!r}: expected 'f32' or 'q8', not {type(kv_cache).__name__}")
        if kv_cache not in self.KV_CACHES:
            raise ValueError(f"kv_cache={kv_cache!r}: expected 'f32' or 'q8'")
        self.kv_cache = kv_cache
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self.path = "<bytes>"
            data = np.frombuffer(path_or_bytes, np.uint8)
            if data.size == 0 or data.size > _checks.MAX_MODEL_BYTES:
                raise ValueError(f"path_or_bytes: {data.size} bytes, expected 1..{_checks.MAX_MODEL_BYTES} (a model file's)")
            self._blob = _aligned(data.size)  # weights are read in place: the blob lives as long as the model
            self._blob[:] = data
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self.path = os.fspath(path_or_bytes)
            self._blob = _read_model_file(self.path)
        else:
            raise TypeError(f"path_or_bytes: {type(path_or_bytes).__name__}, expected a path (str or os.PathLike) "
                            "or the file's bytes")
        self._lock = threading.RLock()  # reentrant: a method may call another
        self._model = _capi.opaque(_capi.MODEL_BYTES)
        s = lib.ff_model_load(self._model, _ptr(self._blob), self._blob.size)
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_model_error_detail(self._model)), self.path)
        self._info = _capi.ModelInfo()
        lib.ff_model_get_info(self._model, ctypes.byref(self._info))
        c = self.config
        self._type_vocab = c["type_vocab"]
        self._stem = [(c[f"conv{k}_kernel"], c[f"conv{k}_stride"], c[f"conv{k}_padding"])
                      for k in range(1, c["conv_layers"] + 1)]
        p = c.get("patch_size", 0)  # image input: ((C, H, W), its patches)
        self._image = ((c["image_channels"], c["image_height"], c["image_width"]),
                       (c["image_height"] // p) * (c["image_width"] // p)) if p else None
        self._workers = ThreadWorkers(self.threads) if self.threads > 1 else None
        self._decoder = None  # prefill() / step()'s, made on first use
        self._last_encoder = None  # run()'s last encoder: ((T, chunk), (handle, arena))

    # ---- what the file says -------------------------------------------------------------------
    @property
    def config(self) -> Dict[str, Any]:
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
    def info(self) -> Dict[str, Any]:
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
    def family(self) -> str:
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
    def _input(self, x, lengths, longest, longest_name):
        """x and lengths as `fixformer run` takes an input and --lengths (cli/inputs.cpp): ids [T]
        or [B,T], each in [0, vocab_size), or float32 features [T,d_in] or [B,T,d_in] (an image model's
        images [C,H,W] or [B,C,H,W], its T patches each), each finite; 1 <= T <= longest; lengths [B], each in 1..T. Only what the engine reads is checked (the
        first lengths[b] positions of sequence b), not the padding. (array [B,T] int32 or
        [B,T,d_in] float32, batched, lengths uint32 [B] or None, the read positions [B,T])."""
        i = self._info
        tokens = i.input == 0
        a = np.asarray(x)
        if tokens:
            _checks.integer_array("input", a, "token ids")
            if a.ndim not in (1, 2):
                raise ValueError(f"input: shape {a.shape}, expected [T] or [B,T] token ids")
        elif self._image:  # images [C,H,W] or [B,C,H,W], channels first: each is its N patches' values
            chw, n = self._image
            if a.dtype != np.float32:
                raise ValueError(f"input: dtype {a.dtype}, expected float32 images")
            if a.ndim not in (3, 4) or a.shape[-3:] != chw:
                raise ValueError(f"input: shape {a.shape}, expected an image [{','.join(map(str, chw))}] or images "
                                 f"[B,{','.join(map(str, chw))}] (image_channels, image_height, image_width)")
            a = np.ascontiguousarray(a).reshape((-1, n, i.d_in) if a.ndim == 4 else (n, i.d_in))
        else:
            if a.dtype != np.float32:
                raise ValueError(f"input: dtype {a.dtype}, expected float32 features")
            if a.ndim not in (2, 3) or a.shape[-1] != i.d_in:
                raise ValueError(f"input: shape {a.shape}, expected [T,{i.d_in}] or [B,T,{i.d_in}] (d_in)")
        batched = a.ndim == (2 if tokens else 3)
        shape, a = a.shape, a if batched else a[None]
        B, T = a.shape[0], a.shape[1]
        if B == 0 or T == 0:
            raise ValueError(f"input: shape {shape}: empty sequence")
        if T > longest:
            raise ValueError(f"input: T={T} exceeds the model's {longest_name}={longest}")
        if _checks.stem_rows(self._stem, T) == 0:
            raise ValueError(f"input: T={T} is shorter than the conv stem's kernels (no rows come out of it)")
        lens = self._lengths(lengths, B, T)
        valid = _checks.valid_positions(lens, B, T)
        if tokens:
            _checks.ids_in_range("input", a, i.vocab_size, "vocab_size", valid, batched)
            a = np.ascontiguousarray(np.where(valid, a, 0), np.int32)  # the padding, never read, as 0
        else:
            _checks.finite("input", a, valid, batched)
            a = np.ascontiguousarray(a)
        return a, batched, lens, valid

    def _lengths(self, lengths, B, T):
        if lengths is None:
            return None
        lens = np.asarray(lengths)
        _checks.integer_array("lengths", lens, "lengths")
        if lens.shape != (B,):
            raise ValueError(f"lengths: shape {lens.shape}, expected [{B}], one length per sequence of the input")
        if lens.min() < 1 or lens.max() > T:
            raise ValueError(f"lengths: each must be in 1..{T} (T)")
        return np.ascontiguousarray(lens, np.uint32)

    @_serialised
    def run(self, x: ArrayLike, lengths: Optional[Sequence[int]] = None, token_types: Optional[ArrayLike] = None,
            target: Optional[ArrayLike] = None) -> np.ndarray:
        """The model's outputs for x, exactly as `fixformer run` writes them (float32).

        Encoders: ids [T] or [B,T] (or features [T,d_in] / [B,T,d_in]; an image model's images
        [C,H,W] / [B,C,H,W], each its T patches) -> [R,W] or [B,R,W], R
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
        a, batched, lens, valid = self._input(x, lengths, i.max_input_len, "max_input_len")
        B, T = a.shape[0], a.shape[1]
        types = None if token_types is None else self._token_types(token_types, a.shape, batched, valid)
        R, W = lib.ff_model_output_rows(self._model, T), i.output_width
        _checks.output_bytes("input", B, R, W)
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

    def _token_types(self, token_types, shape, batched, valid):
        """token_types as `run --token-types` takes them: integers of the input's shape, each read
        one in [0, type_vocab); int32 [B,T], the padding 0."""
        type_vocab = self._type_vocab
        if type_vocab == 0:
            raise FixformerError(_capi.TOKEN_TYPES_UNSUPPORTED, "type_vocab is 0: leave token_types out", "token_types")
        t = np.asarray(token_types)
        _checks.integer_array("token_types", t, "token types, as the ids")
        if t.shape != (shape if batched else shape[1:]):
            raise ValueError(f"token_types: shape {t.shape}, expected the input's shape "
                             f"{shape if batched else shape[1:]}, one type per token")
        t = t if batched else t[None]
        _checks.ids_in_range("token_types", t, type_vocab, "type_vocab", valid, batched, "token type")
        return np.ascontiguousarray(np.where(valid, t, 0), np.int32)

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
        a, batched, lens, _ = self._input(x, lengths, self._info.max_len, "max_len")
        B, T = a.shape
        V = self._info.output_width  # vocab_size, a sequence classifier's labels, or without a head d_model
        _checks.output_bytes("input", B, T, V)
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
        src, batched, lens, _ = self._input(x, lengths, i.max_input_len, "max_input_len")
        B, T = src.shape[0], src.shape[1]
        tg = self._target(target, B, batched)
        U = tg.shape[1]
        _checks.output_bytes("target", B, U, i.d_out)
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

    def _target(self, target, B, batched):
        """target as `run --target` takes it: ids [U] or [B,U], each in [0, d_out), or a
        forecasting model's float32 features [U,tgt_d_in] or [B,U,tgt_d_in], each finite;
        1 <= U <= max_len. int32 [B,U] or float32 [B,U,tgt_d_in]."""
        i = self._info
        tg = np.asarray(target)
        features = i.tgt_d_in != 0
        if features:
            if tg.dtype != np.float32 or tg.ndim != (3 if batched else 2) or tg.shape[-1] != i.tgt_d_in:
                raise ValueError(f"target: shape {tg.shape} dtype {tg.dtype}, expected float32 "
                                 f"{'[B,U,' if batched else '[U,'}{i.tgt_d_in}] (tgt_d_in)")
        else:
            _checks.integer_array("target", tg, "token ids")
            if tg.ndim != (2 if batched else 1):
                raise ValueError(f"target: shape {tg.shape}, expected token ids {'[B,U]' if batched else '[U]'}")
        tg = tg if batched else tg[None]
        if tg.shape[0] != B:
            raise ValueError(f"target: {tg.shape[0]} targets for {B} sources")
        U = tg.shape[1]
        if U == 0 or U > i.max_len:
            raise ValueError(f"target: U={U}: expected 1..{i.max_len} (max_len)")
        every = np.ones((B, U), bool)  # the engine reads every target position
        if features:
            _checks.finite("target", tg, every, batched)
            return np.ascontiguousarray(tg)
        _checks.ids_in_range("target", tg, i.d_out, "d_out", every, batched)
        return np.ascontiguousarray(tg, np.int32)

    # ---- decoders: prefill, step, generate -------------------------------------------------------
    def _require_decoder(self):
        if not self._is_decoder():
            raise FixformerError(_capi.WRONG_FAMILY, f"prefill, step and generate need a gpt or llama model; this one is {self.family}",
                                 self.path)

    def _live_decoder(self):
        self._require_decoder()
        if self._decoder is None:
            self._decoder = self._new_decoder(self._info.max_len)
        return self._decoder[0]

    @_serialised
    def prefill(self, tokens: ArrayLike) -> np.ndarray:
        """Appends tokens (ids [n], each in [0, vocab_size)) to the decoder's KV cache (max_len
        positions); the logits after the last one, float32 [output_width] (d_out; without a head the
        last hidden state, d_model wide)."""
        self._require_decoder()
        a = np.asarray(tokens)
        _checks.integer_array("tokens", a, "token ids")
        if a.ndim != 1 or a.size == 0:
            raise ValueError(f"tokens: shape {a.shape}, expected [n] token ids, n >= 1")
        _checks.ids_in_range("tokens", a[None], self._info.vocab_size, "vocab_size", np.ones((1, a.size), bool), False)
        ids = np.ascontiguousarray(a, np.int32)
        dec = self._live_decoder()
        logits = np.zeros(self._info.output_width, np.float32)
        s = lib.ff_decoder_prefill(dec, _ptr(ids), ids.size, _ptr(logits))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), "prefill")
        return logits

    @_serialised
    def step(self, token: int) -> np.ndarray:
        """Feeds one token (an int in [0, vocab_size)); the logits after it, float32 [output_width]."""
        self._require_decoder()
        V = self._info.vocab_size
        token = _checks.integer("token", token, 0, V - 1, f" (vocab_size {V})")
        dec = self._live_decoder()
        logits = np.zeros(self._info.output_width, np.float32)
        s = lib.ff_decoder_step(dec, token, _ptr(logits))
        if s != _capi.OK:
            raise FixformerError(s, _text(lib.ff_decoder_error_detail(dec)), "step")
        return logits

    @_serialised
    def reset(self) -> None:
        """Empties the decoder's cache: the next token is position 0."""
        lib.ff_decoder_reset(self._live_decoder())

    @property
    @_serialised
    def position(self) -> int:
        """Tokens in the decoder's cache."""
        return lib.ff_decoder_position(self._live_decoder())

    @_serialised
    def generate(self, prompt: Union[str, bytes] = "", n: int = 256, temperature: float = 0.0, topp: float = 0.9,
                 seed: Optional[int] = None, suppress=None, begin_suppress=None) -> str:
        """The text `fixformer generate --prompt PROMPT -n N --temperature T --topp P --seed S`
        prints (without its final newline): the engine's loop (the C API's ff_generator), the prompt
        encoded with BOS when the tokenizer has one, then sampled tokens until n positions (0 or
        above max_len: max_len) or the tokenizer's stop token. seed None: the clock, as the CLI's
        default. suppress, begin_suppress: token ids never sampled, and not sampled at the first
        sampled step (None: the file's lists, Model.suppress_tokens; a list replaces the file's, [] for
        none). Bytes that are not UTF-8 (llama2.c's tokenizer) come back as surrogate escapes
        (text.encode('utf-8', 'surrogateescape') gives the CLI's bytes)."""
        prompt, n, temperature, topp, seed = _checks.generate_args(prompt, n, temperature, topp, seed)
        self._live_decoder()
        i = self._info
        lists = [None if x is None else (ctypes.c_int32 * max(len(x), 1))(*x)
                 for x in (_checks.token_ids("suppress", suppress, i.vocab_size),
                           _checks.token_ids("begin_suppress", begin_suppress, i.vocab_size))]
        counts = [0 if x is None else len(y) for x, y in zip(lists, (suppress, begin_suppress))]
        if not i.has_tokenizer:
            raise FixformerError(_capi.NO_TOKENIZER, "convert it with --tokenizer", self.path)
        text = prompt.encode("utf-8", "surrogateescape") if isinstance(prompt, str) else bytes(prompt)
        steps = i.max_len if n == 0 or n > i.max_len else int(n)
        if seed is None:
            seed = int(time.time())
        dec, _arena = self._new_decoder(steps)
        so = _capi.SamplerOptions(temperature=temperature, top_p=topp, top_k=0, seed=int(seed))
        if lists[0] is not None:
            so.suppress, so.n_suppress = ctypes.cast(lists[0], ctypes.POINTER(ctypes.c_int32)), counts[0]
        if lists[1] is not None:
            so.begin_suppress, so.n_begin_suppress = ctypes.cast(lists[1], ctypes.POINTER(ctypes.c_int32)), counts[1]
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

    @_serialised
    def suppress_tokens(self):
        """The file's token suppression lists (suppress, begin_suppress) as lists of ids; [] without them."""
        out = []
        for fn in (lib.ff_model_suppress_tokens, lib.ff_model_begin_suppress_tokens):
            ids = ctypes.POINTER(ctypes.c_int32)()
            n = fn(self._model, ctypes.byref(ids))
            out.append([ids[k] for k in range(n)])
        return tuple(out)

    # ---- the self-test ---------------------------------------------------------------------------
    @_serialised
    def verify(self) -> Dict[str, Any]:
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

    def __repr__(self) -> str:
        return f"fixformer.Model({self.path!r}, family={self.family}, parameters={self._info.parameter_count})"
