"""Builds tfliquid: the C++ ops in ops/ become one shared library, protos/ become Python modules.

Every compiler and linker flag that concerns TensorFlow comes from `tf.sysconfig`, so the library matches the
TensorFlow it is built against (C++ standard, ABI, include and library paths). The TensorFlow version is embedded
in the library (ops/common/build_info.cc); the loader refuses to load it under any other version.
"""

import glob
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_NAME = "tfliquid._lib._tfliquid_ops"


def _tensorflow():
    try:
        import tensorflow as tf
    except ImportError as e:  # pragma: no cover - depends on the build environment
        sys.exit(
            f"tfliquid: building the ops needs TensorFlow importable at build time ({e}). "
            "Install tensorflow first, then `pip install --no-build-isolation .`"
        )
    return tf


def generate_protos():
    """protos/*.proto -> tfliquid/_proto/*_pb2.py (generated at build time, never committed)."""
    out_dir = os.path.join(HERE, "tfliquid", "_proto")
    protos = sorted(glob.glob(os.path.join(HERE, "protos", "*.proto")))
    from grpc_tools import protoc  # build requirement

    args = ["protoc", f"-I{os.path.join(HERE, 'protos')}", f"--python_out={out_dir}", *protos]
    if protoc.main(args) != 0:
        sys.exit("tfliquid: protoc failed on " + " ".join(protos))


class BuildPyWithProtos(build_py):
    def run(self):
        generate_protos()
        super().run()


class BuildTensorFlowOps(build_ext):
    """Compiles ops/**/*.cc into tfliquid/_lib/_tfliquid_ops.so with TensorFlow's own flags."""

    def get_ext_filename(self, fullname):
        # A plain name: this is a TensorFlow op library loaded by tf.load_op_library, not a Python module.
        return os.path.join(*fullname.split(".")) + ".so"

    def build_extensions(self):
        tf = _tensorflow()
        compile_flags = tf.sysconfig.get_compile_flags()
        link_flags = tf.sysconfig.get_link_flags()
        for ext in self.extensions:
            ext.extra_compile_args = compile_flags + [
                f'-DTFLIQUID_TF_VERSION="{tf.__version__}"',
                "-O3",
                "-fPIC",
                "-Wno-deprecated-declarations",
                "-Wno-sign-compare",
                "-Wno-unused-function",
            ]
            ext.extra_link_args = link_flags + ["-ljpeg"]
        # The Python include directory setuptools adds is harmless; the C++ standard comes from TF's flags.
        self.compiler.compiler_so = [f for f in self.compiler.compiler_so if not f.startswith("-std=")]
        _compile_in_parallel(self.compiler)
        super().build_extensions()


def _compile_in_parallel(compiler):
    """One compiler process per source file and core: TF's headers make each file take 10-20 s."""
    compile_serially = compiler.compile

    def compile_sources(sources, *args, **kwargs):
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            objects = pool.map(lambda source: compile_serially([source], *args, **kwargs), sources)
            return [obj for objs in objects for obj in objs]

    compiler.compile = compile_sources


def _op_sources():
    sources = sorted(glob.glob("ops/**/*.cc", recursive=True))
    return [s for s in sources if not s.startswith(os.path.join("ops", "tests"))]


if __name__ == "__main__":
    generate_protos()  # here too: editable installs skip build_py
    setup(
        ext_modules=[Extension(LIB_NAME, sources=_op_sources(), include_dirs=["ops"], language="c++")],
        cmdclass={"build_ext": BuildTensorFlowOps, "build_py": BuildPyWithProtos},
        package_data={"tfliquid._lib": ["*.so"], "tfliquid._proto": ["*.py"], "tfliquid.l3": ["kernels/*.cu"]},
    )
