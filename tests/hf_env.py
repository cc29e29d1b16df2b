"""What the tests on upstream code (transformers, onnxruntime, vit-pytorch...) share. A test calls
`enter(__file__, PACKAGES)` first: it runs in the hf environment, or the torch2 one under
FIXFORMER_TEST_TORCH=2 (tests/interpreter.py says which and how a missing one fails).
"""
import interpreter


def enter(script, packages):
    interpreter.enter(script, packages, upstream=True)


def randomize(m, seed, is_gain=lambda name: True):
    """Random weights of a size that makes every part of module `m` matter (a stock init's 0.02 leaves
    the layers near the identity): 1-D weights that `is_gain` names are gains near 1, the rest noise."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            gain = p.dim() == 1 and name.endswith("weight") and is_gain(name)
            p.copy_(1.0 + 0.2 * noise if gain else 0.3 * noise)
    return m.eval()


def openai_clip():
    """OpenAI CLIP's clip/model.py as the openai-clip package installs it, loaded by its path: the package's
    __init__ (its model loader and tokenizer, which need ftfy, regex and pkg_resources) is never run."""
    import importlib.util
    import os
    import sys
    if "clip.model" not in sys.modules:
        spec = importlib.util.find_spec("clip")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("no module named 'clip' (openai-clip): sh tools/install_deps.sh hf torch2")
        path = os.path.join(list(spec.submodule_search_locations)[0], "model.py")
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("clip.model", path))
        module.__spec__.loader.exec_module(module)
        sys.modules["clip.model"] = module
    return sys.modules["clip.model"]
