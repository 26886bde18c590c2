"""Keras finds tfliquid's layers in a saved model once `import tfliquid` has run, whether Keras was imported
before tfliquid or after it, without `import tfliquid` importing Keras (or TensorFlow) itself.

Keras deserializes a custom class only from its registry (`keras.saving.register_keras_serializable`), which the
class's module fills when it is imported. So: if Keras is loaded, tfliquid's layers module is imported now;
otherwise a meta-path finder waits for `import keras` and imports it once Keras has finished loading."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

LAYERS_MODULE = "tfliquid.keras.layers"


def register_layers_with_keras() -> None:
    """Registers tfliquid's Keras layers now if Keras is loaded, else right after Keras loads."""
    keras = sys.modules.get("keras")
    if keras is not None and not getattr(getattr(keras, "__spec__", None), "_initializing", False):
        _import_layers()
    elif not any(isinstance(finder, _AfterKerasLoads) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKerasLoads())


def _import_layers() -> None:
    try:
        importlib.import_module(LAYERS_MODULE)
    except Exception as e:  # a broken install must not break `import keras`: say why loading may fail later
        warnings.warn(
            f"tfliquid could not register its Keras layers (models using them will not load): {e}", stacklevel=2
        )


class _AfterKerasLoads(importlib.abc.MetaPathFinder):
    """Finds `keras` as the other finders do, with a loader that imports tfliquid's layers after Keras's own
    module has run. Removes itself at the first `import keras`."""

    def find_spec(self, name, path, target=None):
        if name != "keras":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenImportLayers(spec.loader)
        return spec


class _ThenImportLayers(importlib.abc.Loader):
    """A module's own loader, then tfliquid's layers imported; everything else (resources, source) is the
    wrapped loader's."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _import_layers()

    def __getattr__(self, name):
        return getattr(self._loader, name)
