/* sbdh3: nghttp3 over QUIC streams the caller carries (see sbdh3.h), through the one HTTP/3 layer. */
#include "sbdh3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../native/sbhttp3.h"

#define SBDH3_VERSION "0.2.0"

/* The caller carries the streams: the layer gets no QUIC hooks, so what QUIC must do goes up as events. */
struct sbdh3_conn {
  sbhttp3 h;
  sbhttp3_evq q;
};

/* ---- API -------------------------------------------------------------- */

const char *sbdh3_version(void) {
  static char v[64];
  if (!v[0]) snprintf(v, sizeof v, "sbdh3 %s, nghttp3 %s", SBDH3_VERSION, nghttp3_version(0)->version_str);
  return v;
}

sbdh3_conn *sbdh3_conn_new(int server, uint64_t max_body, uint64_t max_field_section) {
  if (max_body == 0) return NULL;
  sbdh3_conn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  sbhttp3_init(&c->h, server, max_body, max_field_section, &c->q, NULL, NULL);
  if (sbhttp3_start(&c->h) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

void sbdh3_conn_free(sbdh3_conn *c) {
  if (!c) return;
  sbhttp3_stop(&c->h);
  sbhttp3_evq_clear(&c->q);
  free(c);
}

int sbdh3_conn_set_max_streams(sbdh3_conn *c, uint64_t n) {
  if (!c || !c->h.server) return SBWIRE_ERR_INVALID;
  nghttp3_conn_set_max_client_streams_bidi(c->h.hc, n);
  return 0;
}

int sbdh3_conn_bind(sbdh3_conn *c, int64_t control, int64_t qpack_encoder, int64_t qpack_decoder) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (nghttp3_conn_bind_control_stream(c->h.hc, control) != 0) return SBWIRE_ERR_INVALID;
  if (nghttp3_conn_bind_qpack_streams(c->h.hc, qpack_encoder, qpack_decoder) != 0) return SBWIRE_ERR_INVALID;
  return 0;
}

int sbdh3_conn_read(sbdh3_conn *c, int64_t stream_id, const uint8_t *data, size_t len, int fin) {
  if (!c || (len && !data)) return SBWIRE_ERR_INVALID;
  nghttp3_ssize n = sbhttp3_read(&c->h, stream_id, data, len, fin, 0);
  if (n >= 0) return c->q.n > INT32_MAX ? INT32_MAX : (int)c->q.n;
  if (n == NGHTTP3_ERR_NOMEM) return SBWIRE_ERR_NOMEM;
  /* Whatever the peer's bytes broke, the connection must close with the matching HTTP/3 code. */
  c->h.error_code = nghttp3_err_infer_quic_app_error_code((int)n);
  return SBWIRE_ERR_PROTO;
}

int64_t sbdh3_conn_write(sbdh3_conn *c, uint8_t *out, size_t cap, uint8_t *meta) {
  if (!c || !out || !meta) return SBWIRE_ERR_INVALID;
  int64_t sid = -1;
  int fin = 0;
  nghttp3_vec vec[16];
  nghttp3_ssize nvec = nghttp3_conn_writev_stream(c->h.hc, &sid, &fin, vec, 16);
  if (nvec < 0) return sbhttp3_error(&c->h, (int)nvec);
  if (sid < 0) return SBWIRE_ERR_DONE;
  size_t n = 0;
  int whole = 1;
  for (nghttp3_ssize i = 0; i < nvec; i++) {
    size_t take = vec[i].len;
    if (take > cap - n) {
      take = cap - n;
      whole = 0;
    }
    memcpy(out + n, vec[i].base, take);
    n += take;
    if (!whole) break;
  }
  int rv = nghttp3_conn_add_write_offset(c->h.hc, sid, n);
  /* The caller's QUIC delivers what it was given: nghttp3 may free it at once. */
  if (rv == 0 && n) rv = nghttp3_conn_add_ack_offset(c->h.hc, sid, n);
  if (rv != 0) return sbhttp3_error(&c->h, rv);
  sbwire_put_u64(meta, (uint64_t)sid);
  sbwire_put_u32(meta + 8, whole && fin ? 1u : 0u);
  return (int64_t)n;
}

int sbdh3_conn_request(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                       size_t body_len) {
  if (!c) return SBWIRE_ERR_INVALID;
  return sbhttp3_request(&c->h, stream_id, hdrs, hdrs_len, body, body_len);
}

int sbdh3_conn_respond(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                       size_t body_len) {
  if (!c) return SBWIRE_ERR_INVALID;
  return sbhttp3_respond(&c->h, sbhttp3_stream_find(&c->h, stream_id), hdrs, hdrs_len, body, body_len);
}

int64_t sbdh3_conn_poll(sbdh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  return sbhttp3_evq_poll(&c->q, buf, cap);
}

int sbdh3_conn_close_stream(sbdh3_conn *c, int64_t stream_id, uint64_t app_error) {
  if (!c) return SBWIRE_ERR_INVALID;
  int rv = nghttp3_conn_close_stream(c->h.hc, stream_id, app_error);
  if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) return 0;
  return rv == 0 ? 0 : sbhttp3_error(&c->h, rv);
}

int sbdh3_conn_shutdown(sbdh3_conn *c) {
  if (!c || !c->h.server) return SBWIRE_ERR_INVALID;
  int rv = nghttp3_conn_submit_shutdown_notice(c->h.hc);
  if (rv == 0) rv = nghttp3_conn_shutdown(c->h.hc);
  return rv == 0 ? 0 : sbhttp3_error(&c->h, rv);
}

uint64_t sbdh3_conn_error_code(sbdh3_conn *c) { return c ? c->h.error_code : 0; }

int sbdh3_conn_stream_count(sbdh3_conn *c) { return c ? c->h.nstreams : SBWIRE_ERR_INVALID; }
