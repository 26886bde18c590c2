// The TensorFlow version this library was compiled against, embedded as a string that the Python loader finds
// in the file's bytes BEFORE loading it: a custom-op library loaded under another TensorFlow fails with
// undefined symbols or worse, so the check must not need the library to load.
#ifndef TFLIQUID_TF_VERSION
#error "setup.py defines TFLIQUID_TF_VERSION"
#endif

extern "C" __attribute__((used)) const char kTfliquidBuildInfo[] =
    "tfliquid-built-for-tensorflow=" TFLIQUID_TF_VERSION ";";
