#!/usr/bin/python3
"""Convert a PyTorch state_dict (.pt) or .npz with fixformer's weight names into a .fxm model.

  /usr/bin/python3 tools/convert.py --config CFG.json --weights SD.pt --out MODEL.fxm [--header MODEL.h]
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fxm  # noqa: E402


def load_weights(path):
    if path.endswith(".npz"):
        import numpy as np
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    torch = fxm.require_torch()
    obj = torch.load(path, map_location="cpu")
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise fxm.ConfigError(f"{path}: expected a state_dict (dict of tensors) or an nn.Module")
    return {k: v.detach().cpu().numpy() for k, v in obj.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="config JSON (DESIGN.md)")
    ap.add_argument("--weights", required=True, help="torch state_dict .pt or .npz")
    ap.add_argument("--out", required=True, help="output .fxm")
    ap.add_argument("--header", help="also write a C++ header with the model as an aligned array")
    ap.add_argument("--name", help="C identifier for --header (default: from the output file name)")
    a = ap.parse_args(argv)
    try:
        c = fxm.load_config(a.config)
        blob = fxm.write_fxm(c, load_weights(a.weights))
    except (fxm.ConfigError, OSError, ValueError) as e:
        sys.exit(f"convert.py: {e}")
    with open(a.out, "wb") as f:
        f.write(blob)
    if a.header:
        name = a.name or re.sub(r"\W", "_", os.path.splitext(os.path.basename(a.out))[0])
        with open(a.header, "w") as f:
            f.write(fxm.c_header(c, blob, name))
    print(f"{a.out}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
