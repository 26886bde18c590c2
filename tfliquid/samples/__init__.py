"""Demo and benchmark material made from the photographs shipped inside scikit-image and scikit-learn (no
download): `samples.photos` (the photos as a labelled image dataset, JPEG folders and TFRecords) and
`samples.model` (the small Keras CNN that `make demo` and the benchmarks train). Import the module you need;
`samples.model` imports Keras."""
