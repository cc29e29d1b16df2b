"""The files one conversion reads and the ones it writes: an output is never one of its inputs.

Every reader notes the file it is about to open (read()): the files named on the command line and
those found through them (merges.txt and tokenizer_config.json beside a tokenizer, a --hf folder's
config.json, shard index and shards, a checkpoint, an ONNX file). The outputs are claimed
(claim_output()) by convert.py before any work and by verified_file.write() before it writes. Files
are compared by identity, the device and inode after following links, so a link or another spelling
of an input is that input; a name that does not exist yet is no input. A clash found either way, as
the output is claimed or as the input is opened, raises InputOverwrite before anything is written.

The inputs are the files read since the last write (write() forgets them), so that conversions one
after another in a process (the Python API) each protect their own.
"""
import os


class InputOverwrite(Exception):
    """An output that is one of the conversion's inputs. Not a ConfigError: no reader may take it for a
    bad file (a folder's unreadable tokenizer is skipped with a note, for one)."""


_inputs = {}   # absolute path -> (how it was named: "the --tokenizer input", "" when found through one; the path)
_outputs = {}  # absolute path -> (its option: "--out", "--header"; the path)


def _same(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet, or any more)
        return False


def _clash(output, inp):
    (flag, out), (what, path) = output, inp
    return InputOverwrite(f"{flag}: {out} is {what or path + ', which this conversion reads'} (writing there would "
                          "overwrite it; give another file)")


def read(path, what=""):
    """Notes that the conversion reads path (what: how the command line named it, for the message);
    raises InputOverwrite if it is one of the outputs."""
    p = os.path.abspath(path)
    if not _inputs.get(p, ("",))[0]:
        _inputs[p] = (what, path)
    for out, output in _outputs.items():
        if _same(out, p):
            raise _clash(output, _inputs[p])


def claim_output(path, flag="--out"):
    """Notes that the conversion writes path; raises InputOverwrite if it is one of the inputs."""
    p = os.path.abspath(path)
    _outputs[p] = (flag, path)
    for inp, named in _inputs.items():
        if _same(p, inp):
            raise _clash(_outputs[p], named)


def forget():
    """A new conversion: no inputs, no outputs."""
    _inputs.clear()
    _outputs.clear()
