# Sourced by the build scripts beside it: `cxx`, the C++ compiler to call once per source (-c). ccache goes in
# front where it is installed: it makes unchanged sources free to build again (it caches compiles, not links).
cxx=(g++)
if command -v ccache > /dev/null; then
  cxx=(ccache g++)
fi
