#!/bin/sh
# lab, self-unpacking: this stub followed by a gzip'd tar of Deno, sbilab, its
# npm packages, the native modules and the shared libraries they need beyond
# glibc (found through the modules' RPATH, so no LD_LIBRARY_PATH reaches the
# host tools lab starts). The first run unpacks the archive, checks its
# SHA-256 and moves it to ${XDG_CACHE_HOME:-~/.cache}/sbilab/<version>-<sha>;
# later runs start from there. Written by scripts/pack.ts, which fills in the
# @...@ fields. Needs only sh, coreutils, tar, gzip and flock (util-linux).
set -eu
ID='@ID@'
SHA='@SHA@'
SKIP=@SKIP@
self=$0
case $self in */*) ;; *) self=$(command -v -- "$self") ;; esac
base=${XDG_CACHE_HOME:-${HOME:?lab needs HOME or XDG_CACHE_HOME}/.cache}/sbilab
dir=$base/$ID

if [ ! -d "$dir" ]; then
  mkdir -p "$base"
  tmp=$(mktemp -d "$base/.unpack-$ID.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # one read: the archive is hashed while it unpacks, and used only if the hash matches
  mkfifo "$tmp/.fifo"
  sha256sum <"$tmp/.fifo" >"$tmp/.sum" 2>/dev/null &
  tail -c +"$SKIP" "$self" | tee "$tmp/.fifo" | {
    tar -xzf - -C "$tmp" 2>"$tmp/.log" && : >"$tmp/.unpacked" || :
    cat >/dev/null
  }
  wait $! || :
  read -r sum rest <"$tmp/.sum" 2>/dev/null || sum=
  if [ -n "$sum" ] && [ "$sum" != "$SHA" ]; then
    echo "error: $self is damaged (its archive does not match SHA-256 $SHA)" >&2
    exit 1
  fi
  if [ ! -e "$tmp/.unpacked" ] || [ -z "$sum" ]; then
    why=$(tail -n 1 "$tmp/.log" 2>/dev/null) || why=
    echo "error: unpacking $self into $base failed (it needs @MB@ MB there)${why:+: $why}" >&2
    exit 1
  fi
  rm -f "$tmp/.fifo" "$tmp/.sum" "$tmp/.log" "$tmp/.unpacked"
  : >"$tmp/.lock"
  # rename(2) is atomic: of two first runs at once, one wins and the other's copy goes
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  trap - EXIT
  # older versions' folders, unless a running lab still holds their lock
  for old in "$base"/*; do
    [ "$old" = "$dir" ] || [ ! -d "$old" ] && continue
    [ -f "$old/.lock" ] || continue
    flock -xn "$old/.lock" rm -rf "$old" 2>/dev/null || true
  done
fi

# held (shared) for as long as lab runs, so no newer lab removes this folder meanwhile
exec 9<"$dir/.lock"
flock -s 9
export DENO_DIR="$dir/deno_dir" DENO_NO_UPDATE_CHECK=1 DENO_NO_PROMPT=1
export SBILAB_BUNDLE="$dir"
exec "$dir/bin/deno" run -A --unstable-net --v8-flags=--max-semi-space-size=1 --cached-only --quiet "$dir/app/main.ts" "$@"
