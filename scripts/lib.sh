# Shared by the scripts in this folder: find swift, and install Debian packages that are missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  export PATH="/opt/swift/usr/bin:$PATH"
fi

# ensure_packages PKG... installs the Debian packages not yet installed (apt-get update first).
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "==> installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The packages every build needs (Lua 5.4's headers and library, found through pkg-config),
# and any more given, in one apt run.
ensure_build_packages() {
  ensure_packages pkg-config liblua5.4-dev "$@"
}

# ensure_zeroconf makes `python3 -c 'import zeroconf'` work: python-zeroconf is the mDNS stack
# no one here wrote that the interop tests and scripts/bench measure Baton against.
ensure_zeroconf() {
  command -v python3 >/dev/null 2>&1 || ensure_packages python3
  python3 -c 'import zeroconf' 2>/dev/null && return 0
  python3 -m pip --version >/dev/null 2>&1 || ensure_packages python3-pip
  echo "==> installing python-zeroconf (pip)" >&2
  # Debian's own python3 refuses pip installs into it (PEP 668) unless told otherwise.
  python3 -m pip install -q zeroconf 2>/dev/null \
    || python3 -m pip install -q --break-system-packages zeroconf
  python3 -c 'import zeroconf'
}

# ensure_protocol_client makes the protocol interop test's Python client runnable (see
# Tests/BatonNetTests/ProtocolInteropTests.swift): `protoc` (Debian's protobuf-compiler, 3.21
# on bookworm) generates it from Protocol/baton.proto at test time; pip's protobuf runs what
# that protoc generates (4.21, its own release, and later: tried with 4.21.12 and 7.36.2; the
# bound keeps out a major release no one has tried); cryptography (40 or later, for
# verify_directly_issued_by) makes its key and certificate. The client needs Python 3.10 or
# later, whose ssl module reads the agent's certificate chain.
ensure_protocol_client() {
  ensure_packages protobuf-compiler
  command -v python3 >/dev/null 2>&1 || ensure_packages python3
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "the protocol interop test needs Python 3.10 or later; python3 is $(python3 --version 2>&1)" >&2
    return 1
  fi
  local wanted=("protobuf>=4.21,<8" "cryptography>=40")
  local check='
import sys
import google.protobuf, cryptography
def version(text): return tuple(int(part) for part in text.split(".")[:2])
sys.exit(not ((4, 21) <= version(google.protobuf.__version__) < (8, 0) and version(cryptography.__version__) >= (40, 0)))'
  python3 -c "$check" 2>/dev/null && return 0
  python3 -m pip --version >/dev/null 2>&1 || ensure_packages python3-pip
  echo "==> installing ${wanted[*]} (pip)" >&2
  # Debian's own python3 refuses pip installs into it (PEP 668) unless told otherwise.
  python3 -m pip install -q "${wanted[@]}" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "${wanted[@]}"
  python3 -c "$check"
}

# ensure_paho makes `python3 -c 'import paho.mqtt'` work: paho-mqtt is the MQTT 5 client no one
# here wrote that the broker tests and scripts/bench check Baton's own against.
ensure_paho() {
  command -v python3 >/dev/null 2>&1 || ensure_packages python3
  python3 -c 'import paho.mqtt' 2>/dev/null && return 0
  python3 -m pip --version >/dev/null 2>&1 || ensure_packages python3-pip
  echo "==> installing paho-mqtt (pip)" >&2
  python3 -m pip install -q "paho-mqtt>=2,<3" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "paho-mqtt>=2,<3"
  python3 -c 'import paho.mqtt'
}
