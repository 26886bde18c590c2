"""Every op of the library, given an input of the wrong rank, raises an error naming it instead of aborting.

A kernel that calls scalar<>() or vec<>() on a tensor of another rank fails a CHECK and kills the process
(SIGABRT), so the ops are probed in a child process, which reports each probe as a JSON line. The ops are
enumerated from the library's own op list, so an op added later is probed without editing this file; inputs
that are not scalars are declared in RANKS. (TensorFlow 2.21's tf.load_op_library returns no OP_LIST: the list
comes from TF_GetOpList, as load_op_library itself gets it.)

Each input is given with a wrong rank, every other input a valid value, three ways:
  eager          the kernel's check, on a tensor of known shape;
  hidden shape   inside a tf.function whose input signature is TensorSpec(None, dtype), where the shape
                 function cannot see the rank: the kernel's check again;
  static shape   tracing a tf.function with the wrong shape: the shape function's check.

Every integer input and attribute is also given sizes that overflow or make no sense (SIZES), every other input
a valid value (a real JPEG for "contents", a real file for "filename"), in a child process that must outlive
them all: a size that reaches a TensorShape or an allocation unchecked aborts it.
"""

import json
import os
import subprocess
import sys

# Inputs that are not scalars: their rank, or None for inputs not probed (any shape; variable handles and
# datasets, which TensorFlow makes, not callers: a dataset's kernel takes it through tf.data's own scalar check).
# Attributes whose value is checked when the kernel is built, so that "input-checks" would fail before any input is.
VALID_ATTRS = {("Liquid>SeededOrderKeys", "order"): "10,0,2,1"}
RANKS = {
    ("Liquid>ScanGroupDataset", "scan_group_variable"): None,
    ("Liquid>ScanGroupVariableToken", "variable"): None,
    ("Liquid>EncodeL3", "image"): 3,
    ("Liquid>DecodeL3Batch", "encoded"): 1,
    ("Liquid>DecodeJpegCrop", "window"): 1,
    ("Liquid>DecodeJpegCrop", "size"): 1,
    ("Liquid>DecodeJpegSampledCrop", "seed"): 1,
    ("Liquid>DecodeJpegSampledCrop", "size"): 1,
    ("Liquid>DecodeJpegCropBatch", "contents"): 1,
    ("Liquid>DecodeJpegCropBatch", "seeds"): 2,
    ("Liquid>DecodeJpegCropBatch", "size"): 1,
    ("Liquid>DecodeJpegCropBatch", "contexts"): 1,
    ("Liquid>ReadQueueCounts", "queues"): 1,
    ("Liquid>CropPixels", "image"): 3,
    ("Liquid>CropPixels", "window"): 1,
    ("Liquid>CropPixels", "size"): 1,
    ("Liquid>CropWindow", "image_size"): 1,
    ("Liquid>CropWindow", "seed"): 1,
    ("Liquid>RecordDataset", "input_dataset"): None,
    ("Liquid>DeclaredCardinalityDataset", "input_dataset"): None,
    ("Liquid>CacheDataset", "input_dataset"): None,
    ("Liquid>StallStampDataset", "input_dataset"): None,
    ("Liquid>UnsplittableDataset", "input_dataset"): None,
    ("Liquid>IterationDataset", "input_dataset"): None,
    ("Liquid>SeededShuffleDataset", "input_dataset"): None,
    ("Liquid>CacheWithPassDataset", "input_dataset"): None,
}
MODES = ("eager", "hidden shape", "static shape")
SIZES = (0, -1, 2**31 - 1, 2**32, 2**62, -(2**63))
# Attributes given in the sweep of SIZES, so that it reaches the code that the sizes drive.
SIZE_ATTRS = {("Liquid>DecodeJpegScaled", "resize"): True}


def _wrong_shapes(rank: int) -> list[list[int]]:
    """A scalar is given as shape [2]; a tensor of rank r >= 1 with rank r - 1 and r + 1."""
    return [[2]] if rank == 0 else [[1] * (rank - 1), [1] * (rank + 1)]


def _probe_all_ops(kind: str, skip: int):
    """Child process: prints one JSON line as each probe starts and one with its outcome, from probe `skip` on.
    The probes of `kind`: "ranks" (inputs of the wrong rank) or "sizes" (integers out of every range)."""
    import keyword
    import tempfile

    import tensorflow as tf
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session

    from tfliquid import _lib

    module = _lib.load_ops()
    handle = pywrap_tf_session.TF_LoadLibrary(_lib.LIBRARY_PATH)  # already loaded: TensorFlow returns its op list
    try:
        op_list = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetOpList(handle))
    finally:
        pywrap_tf_session.TF_DeleteLibraryHandle(handle)

    def report(**fields):
        print(json.dumps(fields), flush=True)

    report(ops={op.name: [arg.name for arg in op.input_arg] for op in op_list.op})

    def dtype_of(arg):
        return tf.dtypes.as_dtype(arg.type) if arg.type else tf.string  # a type attribute: any dtype will do

    def filled(dtype, shape):
        """Elements "x" or 1: a valid value of every input (1 is a valid scan group, seed, byte count...)."""
        return tf.fill(shape, "x") if dtype == tf.string else tf.ones(shape, dtype)

    variable = tf.Variable(1, dtype=tf.int64)
    real_inputs = {}
    if kind == "sizes":  # so that a kernel gets past its parsing to the sizes
        real_inputs["contents"] = tf.io.encode_jpeg(tf.zeros([16, 24, 3], tf.uint8))
        with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as file:
            file.write(bytes(1000))
        real_inputs["filename"] = tf.constant(file.name)

    def valid_value(op, arg):
        if arg.name in real_inputs:
            return real_inputs[arg.name]
        if dtype_of(arg) == tf.resource:  # a variable's handle (a list of them may be empty)
            return [] if arg.number_attr else variable.handle
        if dtype_of(arg) == tf.variant:  # an input dataset: one of strings, which a record reader takes
            return tf.data.Dataset.from_tensors(tf.constant("x"))._variant_tensor
        rank = RANKS.get((op.name, arg.name), 0)
        if rank is None:  # an item's tensors
            return [filled(dtype_of(arg), [])] if arg.type_list_attr or arg.number_attr else filled(dtype_of(arg), [])
        return filled(dtype_of(arg), [1] * rank)

    def attrs_to_pass(op):
        """Values for the attributes that have no default and are not inferred from the inputs."""
        inferred = {a for arg in op.input_arg for a in (arg.type_attr, arg.type_list_attr, arg.number_attr) if a}
        attrs = {}
        for attr in op.attr:
            if attr.HasField("default_value") or attr.name in inferred:
                continue
            default = {"string": "input-checks", "list(type)": [tf.string], "int": 3}[attr.type]
            attrs[attr.name] = VALID_ATTRS.get((op.name, attr.name), default)
        return attrs

    def python_name(name):
        return name + "_" if keyword.iskeyword(name) else name

    def caller(op, arg, others, attrs):
        """value -> the op's outputs, with `value` as input `arg`."""
        raw_op = getattr(module, op.name.replace(">", "_"))

        def call(value):
            outputs = raw_op(**others, **{python_name(arg.name): value}, **attrs)
            return outputs if op.output_arg else None  # an op without outputs returns an Operation

        return call

    if kind == "sizes":
        _probe_sizes(op_list, skip, report, module, valid_value, attrs_to_pass, python_name)
        return

    index = 0
    for op in op_list.op:
        attrs = attrs_to_pass(op)
        for arg in op.input_arg:
            rank = RANKS.get((op.name, arg.name), 0)
            if rank is None:
                continue
            others = {python_name(a.name): valid_value(op, a) for a in op.input_arg if a.name != arg.name}
            call = caller(op, arg, others, attrs)
            for shape in _wrong_shapes(rank):
                wrong = filled(dtype_of(arg), shape)
                for mode in MODES:
                    index += 1
                    if index <= skip:
                        continue
                    report(start=[op.name, arg.name, shape, mode])
                    try:
                        if mode == "eager":
                            call(wrong)
                        elif mode == "hidden shape":
                            tf.function(call, input_signature=[tf.TensorSpec(None, wrong.dtype)])(wrong)
                        else:
                            tf.function(call).get_concrete_function(tf.TensorSpec(shape, wrong.dtype))
                        outcome = {"error": None}
                    except Exception as e:  # noqa: BLE001 - every outcome is reported and judged by the test
                        outcome = {"error": type(e).__name__, "message": str(e)}
                    report(op=op.name, input=arg.name, shape=shape, mode=mode, **outcome)
    report(done=True)


def _probe_sizes(op_list, skip, report, module, valid_value, attrs_to_pass, python_name):
    """Each integer scalar input and integer attribute of each op, and all its integer inputs at once (a height and
    a width, say), given each of SIZES, eagerly."""
    import tensorflow as tf

    index = 0
    for op in op_list.op:
        raw_op = getattr(module, op.name.replace(">", "_"))
        integer_inputs = [
            arg.name for arg in op.input_arg if arg.type in (tf.int32.as_datatype_enum, tf.int64.as_datatype_enum)
        ]
        integer_attrs = [attr.name for attr in op.attr if attr.type == "int"]
        targets = [("input", name) for name in integer_inputs] + [("attr", name) for name in integer_attrs]
        if len(integer_inputs) > 1:
            targets.append(("inputs", "*"))
        for where, name in targets:
            for size in SIZES:
                index += 1
                if index <= skip:
                    continue
                report(start=[op.name, name, size, where])
                inputs = {python_name(arg.name): valid_value(op, arg) for arg in op.input_arg}
                attrs = attrs_to_pass(op)
                attrs.update({attr: value for (op_name, attr), value in SIZE_ATTRS.items() if op_name == op.name})
                if where == "attr":
                    attrs[name] = size
                for arg in op.input_arg:
                    if arg.name in integer_inputs and name in (arg.name, "*"):
                        dtype = tf.dtypes.as_dtype(arg.type)
                        inputs[python_name(arg.name)] = tf.constant(size, tf.int64) if dtype == tf.int64 else size
                try:
                    raw_op(**inputs, **attrs)
                    outcome = {"error": None}
                except Exception as e:  # noqa: BLE001 - only the process's survival is judged
                    outcome = {"error": type(e).__name__, "message": str(e)[:300]}
                report(op=op.name, input=name, shape=size, mode=where, **outcome)
    report(done=True)


def _run_probes(kind: str) -> tuple[dict, list[dict]]:
    """The op list and every probe of `kind`, each child that dies restarted after the probe that killed it (which
    is reported with the error "exit N" and the CHECK that failed), so that every failure is listed."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    probes = []
    while True:
        result = subprocess.run(
            [sys.executable, os.path.abspath(__file__), kind, str(len(probes))],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
        lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        assert lines, f"the child process exited with {result.returncode} at start-up:\n{result.stderr[-3000:]}"
        probes += [line for line in lines if "mode" in line]
        if lines[-1] == {"done": True}:
            assert result.returncode == 0, result.stderr[-3000:]
            return lines[0]["ops"], probes
        assert "start" in lines[-1], f"the child process exited with {result.returncode}:\n{result.stderr[-3000:]}"
        op, name, shape, mode = lines[-1]["start"]
        fatal = [line for line in result.stderr.splitlines() if "Check failed" in line or line.startswith("F0000")]
        probes.append(
            {
                "op": op,
                "input": name,
                "shape": shape,
                "mode": mode,
                "error": f"exit {result.returncode}",
                "message": fatal[-1] if fatal else result.stderr[-1000:],
            }
        )


def _judge(probe) -> str | None:
    """None if the probe raised the expected error, else what happened."""
    op, name, error, message = probe["op"], probe["input"], probe["error"], probe.get("message", "")
    if error is None:
        return "no error"
    if probe["mode"] == "static shape":
        if error in ("ValueError", "InvalidArgumentError") and "must be rank" in message:
            return None
    elif error == "InvalidArgumentError" and f"{op}: {name} must be" in message:
        return None
    return f"{error}: {message.strip()[:300]}"


def test_every_op_rejects_inputs_of_the_wrong_rank_without_aborting():
    ops, probes = _run_probes("ranks")
    assert "Liquid>ReadFile" in ops and "Liquid>RecordDataset" in ops
    stale = [key for key in RANKS if key[0] not in ops or key[1] not in ops[key[0]]]
    assert not stale, f"RANKS names inputs the library does not have: {stale}"
    expected = sum(
        len(_wrong_shapes(RANKS.get((op, name), 0))) * len(MODES)
        for op, names in ops.items()
        for name in names
        if RANKS.get((op, name), 0) is not None
    )
    assert len(probes) == expected
    failures = [(p["op"], p["input"], p["shape"], p["mode"], what) for p in probes if (what := _judge(p))]
    assert not failures, "(op, input, shape given, mode, what happened):\n" + "\n".join(map(str, failures))


def test_every_op_outlives_integers_out_of_every_range():
    _, probes = _run_probes("sizes")
    died = [
        (p["op"], p["input"], p["shape"], p["mode"], p["message"][:300]) for p in probes if "exit" in str(p["error"])
    ]
    assert not died, "(op, input or attribute, value, where, what killed the process):\n" + "\n".join(map(str, died))
    probed = {(p["op"], p["input"]) for p in probes}
    assert {("Liquid>DecodeJpegScaled", "target_height"), ("Liquid>RecordDataset", "item_channels")} <= probed
    assert len(probes) == len(probed) * len(SIZES)
    overflow = [p for p in probes if p["op"] == "Liquid>DecodeJpegScaled" and p["shape"] in (2**32, 2**62)]
    assert overflow and all(p["error"] == "InvalidArgumentError" for p in overflow), overflow


if __name__ == "__main__":
    _probe_all_ops(kind=sys.argv[1], skip=int(sys.argv[2]))
