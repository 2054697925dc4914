/*
 * Fuzz target: the wire format both native modules share with TypeScript
 * (transports/native/sbwire.h) where the bytes come from the caller.
 *
 * Input: byte 0 picks what runs, the rest is its input:
 *   0  a header block from JavaScript: sbwire_count_fields / sbwire_next_field, and the two
 *      converters that hand it to the libraries (sbh2_block_to_nv for nghttp2, sbhttp3_fields_of
 *      for nghttp3, in the HTTP/3 layer both h3 modules link), which must agree with the
 *      decoder on every block;
 *   1  event records: fields taken from the input are written with sbwire_put_event and
 *      sbwire_put_field, back to back, and must read back the same.
 */
#include "../transports/h2/native/sbh2_common.h"
#include "fuzz.h"

/* The HTTP/3 layer's converter (sbhttp3_fields_of, transports/native/sbhttp3.c). */
#include "../transports/native/sbhttp3.h"

static void header_block(const uint8_t *b, size_t len) {
  long n = sbwire_count_fields(b, len);
  size_t count;
  nghttp2_nv stack[4];
  nghttp2_nv *nv = sbh2_block_to_nv(b, len, stack, 4, &count);
  nghttp3_nv *nv3 = NULL;
  size_t n3 = 0;
  int rv3 = sbhttp3_fields_of(b, len, &nv3, &n3);
  if (n < 0) {
    FUZZ_CHECK(nv == NULL && count == 0);
    FUZZ_CHECK(rv3 == SBWIRE_ERR_INVALID);
    return;
  }
  fuzz_check_block(b, len);
  FUZZ_CHECK(nv != NULL && count == (size_t)n);
  /* nghttp3 gets the same fields unless there are none or one has an empty name: the layer refuses those */
  int empty = 0;
  for (size_t i = 0; i < count; i++) {
    FUZZ_CHECK(nv[i].name >= b && nv[i].value + nv[i].valuelen <= b + len);
    FUZZ_CHECK(nv[i].name + nv[i].namelen == nv[i].value);
    empty |= nv[i].namelen == 0;
  }
  if (empty || count == 0) {
    FUZZ_CHECK(rv3 == SBWIRE_ERR_INVALID);
  } else {
    FUZZ_CHECK(rv3 == 0 && n3 == count);
    for (size_t i = 0; i < count; i++)
      FUZZ_CHECK(nv3[i].name == nv[i].name && nv3[i].namelen == nv[i].namelen && nv3[i].value == nv[i].value &&
                 nv3[i].valuelen == nv[i].valuelen);
    free(nv3);
  }
  if (nv != stack) free(nv);
}

static void records(fuzz_in *in) {
  static uint8_t buf[1 << 16];
  size_t off = 0;
  struct {
    uint32_t type, conn;
    int64_t sid, code;
    size_t hoff, hl, bl;
  } want[64];
  int nw = 0;
  while (fuzz_left(in) >= 8 && nw < 64) {
    uint32_t type = SBWIRE_EV_CONNECTED + fuzz_u8(in) % SBWIRE_EV_EARLY_REJECTED;
    uint32_t conn = fuzz_u16(in);
    int64_t sid = (int64_t)(int16_t)fuzz_u16(in);
    int64_t code = (int64_t)((uint64_t)fuzz_u16(in) << 48 | fuzz_u8(in));
    size_t nfields = fuzz_u8(in) % 4, got;
    size_t start = off;
    if (off + SBWIRE_EVENT_HEADER_LEN > sizeof buf) break;
    off += SBWIRE_EVENT_HEADER_LEN;
    size_t hl = 0;
    for (size_t i = 0; i < nfields; i++) {
      size_t nl = fuzz_u8(in) % 32, vl = fuzz_u8(in) % 64;
      const uint8_t *name = fuzz_take(in, nl, &got);
      nl = got;
      const uint8_t *value = fuzz_take(in, vl, &got);
      vl = got;
      if (off + hl + SBWIRE_FIELD_PREFIX_LEN + nl + vl > sizeof buf) break;
      hl += sbwire_put_field(buf + off + hl, name, nl, value, vl);
    }
    size_t bl = type == SBWIRE_EV_MESSAGE ? fuzz_u8(in) : 0;
    if (off + hl + bl > sizeof buf) break;
    memset(buf + off + hl, 0x5a, bl);
    if (type != SBWIRE_EV_MESSAGE && type != SBWIRE_EV_RESET && type != SBWIRE_EV_TOO_LARGE) {
      sid = -1; /* connection events carry no stream and no header block */
      off = start + SBWIRE_EVENT_HEADER_LEN;
      hl = 0;
    }
    sbwire_put_event(buf + start, type, conn, sid, code, (uint32_t)hl, (uint32_t)bl);
    want[nw].type = type;
    want[nw].conn = conn;
    want[nw].sid = sid;
    want[nw].code = code;
    want[nw].hoff = start + SBWIRE_EVENT_HEADER_LEN;
    want[nw].hl = hl;
    want[nw].bl = bl;
    nw++;
    off += hl + bl;
  }
  /* read back */
  size_t pos = 0;
  for (int i = 0; i < nw; i++) {
    const uint8_t *p = buf + pos;
    FUZZ_CHECK(sbwire_get_u32(p) == want[i].type && sbwire_get_u32(p + 4) == want[i].conn);
    FUZZ_CHECK((int64_t)fuzz_get_u64(p + 8) == want[i].sid && (int64_t)fuzz_get_u64(p + 16) == want[i].code);
    FUZZ_CHECK(sbwire_get_u32(p + 24) == want[i].hl && sbwire_get_u32(p + 28) == want[i].bl);
    FUZZ_CHECK(pos + SBWIRE_EVENT_HEADER_LEN == want[i].hoff);
    fuzz_check_block(p + SBWIRE_EVENT_HEADER_LEN, want[i].hl);
    pos += SBWIRE_EVENT_HEADER_LEN + want[i].hl + want[i].bl;
  }
  FUZZ_CHECK(pos == off);
  FUZZ_CHECK(fuzz_walk_events(buf, off, NULL, NULL) == nw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size, 0};
  uint8_t what = fuzz_u8(&in);
  if (what % 2 == 0) header_block(data + 1 < data + size ? data + 1 : data, size ? size - 1 : 0);
  else records(&in);
  return 0;
}
