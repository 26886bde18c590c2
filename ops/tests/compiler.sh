# Sourced by the build scripts beside it: `cxx`, the C++ compiler to call once per source (-c). ccache goes in
# front where it is installed (`make` installs it): it makes unchanged sources free to build again (it caches
# compiles, not links). Paths below the checkout are hashed relative to it, and the working directory not at all,
# so that another clone of the same sources (CI's, a fresh one) finds them built.
cxx=(g++)
if command -v ccache > /dev/null; then
  cxx=(ccache g++)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
  export CCACHE_NOHASHDIR=1
fi
