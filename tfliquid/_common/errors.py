"""tfliquid's Python errors: one base class, so that `except tfliquid.TfliquidError` catches everything the package
raises on purpose (TensorFlow errors from the ops, `tf.errors.OpError`, are TensorFlow's own)."""

import re


class TfliquidError(Exception):
    """Base class of every error tfliquid raises on purpose."""


class FormatError(TfliquidError, ValueError):
    """Data violates one of tfliquid's formats (docs/formats/); the message gives the file or byte offset."""


class ConversionError(TfliquidError):
    """A conversion could not complete; the files written so far are kept and a rerun resumes."""


class OperandError(ConversionError):
    """A conversion's source or destination refused before anything is written: a source with no images, a
    destination that is a file, lies inside the source or holds another conversion. The command line reports it as
    a usage error (exit status 2)."""


class RejectedImageError(TfliquidError):
    """One source image cannot be converted as it is; the conversion goes on without it and reports it."""


class CacheDirectoryError(TfliquidError, OSError):
    """A MinIO cache directory cannot be used as asked (it cannot be created or written, or another process uses
    it with settings that exclude this one); the message names the directory and the cause."""


class PathError(TfliquidError, FileNotFoundError):
    """A path given does not exist, or is not the dataset asked for; the message names it. A FileNotFoundError, as
    Python's own open() would raise. The command line reports it as a usage error (exit status 2)."""


class DependencyError(TfliquidError, ImportError):
    """An optional package that a function needs is not installed; the message says what to install."""


class ArgumentError(TfliquidError, ValueError, TypeError):
    """An argument of the wrong type or out of range. A ValueError and a TypeError both, so that callers catching
    either, as Python's own checks would lead them to, catch it."""


def op_error_message(error) -> str:
    """The message of a TensorFlow op error without what TensorFlow wraps around it: "Graph execution error:" (of a
    tf.function), "{{function_node ...}}", "Detected at node ... defined at" and its stack, and "Error in
    user-defined function passed to ... with iterator: ...: " before, " [Op:Name] name: ...", "\n\t [[{{node ...}}]]"
    after, and of a failed assertion all but its message.
    What is left names the file or the argument and says what is wrong."""
    message = error.message.removeprefix("Graph execution error:").lstrip("\n")  # a tf.function's call
    if message.startswith("{{function_node"):
        message = message.split("}} ", 1)[-1]
    # A tf.function traced on a thread other than the main one (a Beam worker's) prefixes where the op was defined.
    message = re.sub(r"^Detected at node .*? defined at \(most recent call last\):\n(?:  File .*\n+)*", "", message)
    wrapped = re.match(r"Error in user-defined function passed to \S+ transformation with iterator: \S+: ", message)
    if wrapped:
        message = message[wrapped.end() :]
    for tail in ("\n\t [[", " [Op:"):
        message = message.split(tail, 1)[0]
    asserted = re.match(r"assertion failed: \[(.*?)\] \[Condition ", message)  # a failed tf.debugging assertion
    return asserted.group(1) if asserted else message
