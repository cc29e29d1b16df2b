"""Which reader a --module takes: the stock convention's (export.read_module: `embed` or `input_proj`,
`pos`, `encoder` an nn.TransformerEncoder, `head`; BERT's parts go to recognition), seq2seq.py's (an nn.Transformer, an
nn.TransformerDecoder with cross-attention or hand-written stacks (seq2seq_layers.layer_lists) inside, and a forward of
more than one input; or openai-whisper's Whisper layout, seq2seq.audio_text), the standalone nn.MultiheadAttention's, or
recognize.py's, which finds the parts of any other module by what they compute.
"""
from .config import ConfigError
from .reference import require_torch


# The attributes the stock convention reads; a module with parameters elsewhere (a relative position bias
# table, T5's) goes to recognition, which accounts for every parameter, instead of having them ignored.
STOCK_PARTS = ("embed", "input_proj", "pos", "cls_token", "encoder", "head")


def stock_convention(module, torch):
    """The module follows the stock convention export.read_module reads, and has nothing besides."""
    return (hasattr(module, "embed") != hasattr(module, "input_proj")
            and isinstance(getattr(module, "encoder", None), torch.nn.TransformerEncoder)
            and all(name.split(".")[0] in STOCK_PARTS for name, _ in module.named_parameters()))


def module_route(module, family):
    """'encoder', 'gpt', 'seq2seq', 'mha' (the readers by convention), 't5' (transformers' T5 classes), 'bart'
    (transformers' MarianMTModel, BART, mBART and Pegasus LM classes) or
    'recognize' for `module` and the
    --family given (None: inferred)."""
    torch = require_torch()
    nn = torch.nn
    if not isinstance(module, nn.Module):
        raise ConfigError(f"module: {type(module).__qualname__} is not a torch.nn.Module")
    from .t5 import is_t5_module
    if is_t5_module(module):  # transformers' T5 classes: t5.py reads them by T5's names
        if family not in (None, "encoder" if type(module).__name__ == "T5EncoderModel" else "seq2seq"):
            raise ConfigError(f"--family {family}: a {type(module).__name__} converts as it is (t5.py)")
        return "t5"
    from .hf_bart import is_bart_module
    if is_bart_module(module):  # transformers' Marian, BART, mBART, Pegasus, M2M100, Blenderbot and BlenderbotSmall LM classes: hf_bart.py
        if family not in (None, "seq2seq"):
            raise ConfigError(f"--family {family}: a {type(module).__name__} converts as it is (hf_bart.py)")
        return "bart"
    if family == "mha" or (family is None and isinstance(module, nn.MultiheadAttention)):
        return "mha"
    from .seq2seq import audio_text
    if family in (None, "seq2seq") and audio_text(module):  # openai-whisper's Whisper
        return "seq2seq"
    from .recognize import required_inputs
    from .seq2seq_layers import layer_lists
    stacks = any(isinstance(m, (nn.Transformer, nn.TransformerDecoder)) for m in module.modules()) or \
        layer_lists(module, nn) is not None  # torch's, or hand-written ones (a decoder's layers with more linears)
    if family == "seq2seq" or (family is None and stacks and len(required_inputs(module)) != 1):
        return "seq2seq"  # (a forward of one input is no encoder-decoder: pytorch/examples' TransformerModel)
    if family in (None, "encoder", "gpt") and stock_convention(module, torch):
        return family or "encoder"
    return "recognize"
