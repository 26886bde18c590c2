"""JPEG below the capabilities that store it: `scans` (the scan split of progressive JPEGs, the oracle; no
TensorFlow) and `ops` (the C++ lossless progressive transcoder, the scan split and strict reading); `sized` (decoding
at a DCT scale) and `crop` (decoding only a crop window, resized, flipped and normalised). PCR stores the scans as
record groups; Liquid keeps JPEG items and reads them strictly when it converts."""
