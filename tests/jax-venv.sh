# shellcheck shell=sh
# jax-venv.sh — sourced by the scripts that run JAX (tests/referee.sh,
# tests/bench/bench-codegen.sh): a virtual environment with JAX for the
# CPU from PyPI, made the first time and kept (the build tree's
# tests/.venv unless the caller names another), so that later runs
# neither download nor install anything.
#
#   jax_venv DIR [PYTHON]   makes DIR a virtual environment with
#                           $JAX_REQUIREMENTS unless it has them already
#                           (PYTHON makes it; default python3).  Sets
#                           jax_python to DIR/bin/python and returns 0,
#                           or sets jax_why to the reason and returns 1:
#                           no venv module, no network, ...
#
# The version is pinned: the referee counts the collectives XLA chooses,
# and another XLA may choose others.  Installing prints only to stderr.

JAX_REQUIREMENTS="jax==0.10.2 jaxlib==0.10.2"

jax_venv() {
  _dir=$1
  _python=${2:-python3}
  jax_python=$_dir/bin/python
  jax_why=
  # made before and complete: the stamp names what was installed
  if test -f "$_dir/.requirements" &&
    test "$(cat "$_dir/.requirements")" = "$JAX_REQUIREMENTS" &&
    "$jax_python" -c 'import jax' 2>/dev/null; then
    return 0
  fi
  if ! command -v "$_python" >/dev/null 2>&1; then
    jax_why="no $_python to make a virtual environment with"
    return 1
  fi
  echo "jax-venv: installing $JAX_REQUIREMENTS into $_dir (once)" >&2
  rm -rf "$_dir"
  if ! "$_python" -m venv "$_dir" >&2; then
    rm -rf "$_dir"
    jax_why="$_python -m venv failed (Debian: apt-get install python3-venv)"
    return 1
  fi
  # shellcheck disable=SC2086 # the requirements are several words
  if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$_dir/bin/pip" install -q \
    --timeout 30 --retries 2 $JAX_REQUIREMENTS >&2; then
    rm -rf "$_dir"
    jax_why="pip could not install $JAX_REQUIREMENTS from PyPI (offline?)"
    return 1
  fi
  if ! "$jax_python" -c 'import jax' >&2; then
    rm -rf "$_dir"
    jax_why="jax was installed into $_dir but does not import"
    return 1
  fi
  echo "$JAX_REQUIREMENTS" >"$_dir/.requirements"
  return 0
}
