/*
 * sbh3 TLS: the GnuTLS session of a QUIC connection and what it offers beyond packet protection:
 * session tickets (server keys rotate with GnuTLS's time-based derivation from one master key,
 * with the ticket lifetime as period), resumption and 0-RTT on the client, a bounded anti-replay
 * store on the server, the keying-material exporter, and what the handshake negotiated.
 */
#define _GNU_SOURCE
#include "sbh3_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "../../native/sb_tls.h"

/* One priority string for h3 and h2 over TLS (transports/native/sb_tls.h). */
static const char PRIORITY[] = SB_TLS_PRIORITY;

/* Recent ClientHellos that carried early data, for the anti-replay window. */
#define REPLAY_SLOTS 4096
/* A ticket blob: magic, then the server's transport parameters, then GnuTLS session data. */
#define TICKET_MAGIC 0x31543348u /* "H3T1" */
#define TICKET_TP_COUNT 8
#define TICKET_HEAD (8 + 8 * TICKET_TP_COUNT)

typedef struct {
  uint8_t digest[32];
  time_t expires;
} replay_entry_t;

struct replay_db {
  replay_entry_t slot[REPLAY_SLOTS];
  size_t n;
};

/*
 * GnuTLS anti-replay store: remembers a ClientHello until its window passes. A repeat within the
 * window, or a full store, refuses the early data (the handshake still completes in 1-RTT).
 */
static int replay_add(void *ptr, time_t expires, const gnutls_datum_t *key, const gnutls_datum_t *data) {
  (void)data;
  struct replay_db *db = ptr;
  uint8_t digest[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, key->data, key->size, digest) != 0) return GNUTLS_E_DB_ERROR;
  time_t now = time(NULL);
  for (size_t i = 0; i < db->n;) {
    if (db->slot[i].expires < now) {
      db->slot[i] = db->slot[--db->n];
      continue;
    }
    if (memcmp(db->slot[i].digest, digest, sizeof(digest)) == 0) return GNUTLS_E_DB_ENTRY_EXISTS;
    i++;
  }
  if (db->n >= REPLAY_SLOTS) return GNUTLS_E_DB_ERROR;
  memcpy(db->slot[db->n].digest, digest, sizeof(digest));
  db->slot[db->n].expires = expires;
  db->n++;
  return 0;
}

int sbh3_config_set_tickets(sbh3_config *cfg, uint32_t lifetime_s) {
  if (!cfg || !cfg->is_server) return SBWIRE_ERR_INVALID;
  if (lifetime_s && !cfg->ticket_key.data && gnutls_session_ticket_key_generate(&cfg->ticket_key) != 0)
    return SBWIRE_ERR_TLS;
  cfg->ticket_lifetime = lifetime_s;
  return 0;
}

int sbh3_config_set_early_data(sbh3_config *cfg, int on, uint32_t window_ms) {
  if (!cfg || (on && cfg->is_server && window_ms == 0)) return SBWIRE_ERR_INVALID;
  cfg->early_data = on ? 1 : 0;
  if (!on || !cfg->is_server) return 0;
  if (!cfg->anti_replay) {
    cfg->replay = calloc(1, sizeof(*cfg->replay));
    if (!cfg->replay) return SBWIRE_ERR_NOMEM;
    if (gnutls_anti_replay_init(&cfg->anti_replay) != 0) {
      free(cfg->replay);
      cfg->replay = NULL;
      return SBWIRE_ERR_TLS;
    }
    gnutls_anti_replay_set_add_function(cfg->anti_replay, replay_add);
    gnutls_anti_replay_set_ptr(cfg->anti_replay, cfg->replay);
  }
  gnutls_anti_replay_set_window(cfg->anti_replay, window_ms);
  return 0;
}

/* GnuTLS: a handshake message went out; count it (until the handshake completes) and hand it to QUIC. */
static int tls_send_crypto(gnutls_session_t session, gnutls_record_encryption_level_t level,
                           gnutls_handshake_description_t htype, const void *data, size_t len) {
  ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
  sbh3_conn *c = ref->user_data;
  if (htype == GNUTLS_HANDSHAKE_CHANGE_CIPHER_SPEC) return 0;
  int rv = ngtcp2_conn_submit_crypto_data(c->qc, ngtcp2_crypto_gnutls_from_gnutls_record_encryption_level(level),
                                          data, len);
  if (rv != 0) {
    ngtcp2_conn_set_tls_error(c->qc, rv);
    return -1;
  }
  if (!ngtcp2_conn_get_handshake_completed(c->qc)) c->hs_sent += len;
  return 0;
}

int tls_recv_crypto_data(ngtcp2_conn *qc, ngtcp2_crypto_level level, uint64_t offset, const uint8_t *data,
                         size_t len, void *user_data) {
  if (!ngtcp2_conn_get_handshake_completed(qc)) ((sbh3_conn *)user_data)->hs_recv += len;
  return ngtcp2_crypto_recv_crypto_data_cb(qc, level, offset, data, len, user_data);
}

/* ngtcp2_crypto: the QUIC connection behind a TLS session. */
static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) { return ((sbh3_conn *)ref->user_data)->qc; }

/* GnuTLS hook (client): a NewSessionTicket arrived; keep it with the server's transport parameters. */
static int on_ticket(gnutls_session_t session, unsigned htype, unsigned when, unsigned incoming,
                     const gnutls_datum_t *msg) {
  (void)when;
  (void)msg;
  if (htype != GNUTLS_HANDSHAKE_NEW_SESSION_TICKET || !incoming) return 0;
  ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
  sbh3_conn *c = ref->user_data;
  const ngtcp2_transport_params *p = ngtcp2_conn_get_remote_transport_params(c->qc);
  gnutls_datum_t d = {0};
  if (!p || gnutls_session_get_data2(session, &d) != 0) return 0;
  uint8_t head[TICKET_HEAD];
  uint64_t tp[TICKET_TP_COUNT] = {
      p->initial_max_streams_bidi,          p->initial_max_streams_uni,
      p->initial_max_stream_data_bidi_local, p->initial_max_stream_data_bidi_remote,
      p->initial_max_stream_data_uni,       p->initial_max_data,
      p->active_connection_id_limit,        p->max_udp_payload_size,
  };
  uint32_t magic = TICKET_MAGIC, count = TICKET_TP_COUNT;
  memcpy(head, &magic, 4);
  memcpy(head + 4, &count, 4);
  for (int i = 0; i < TICKET_TP_COUNT; i++) sbwire_put_u64(head + 8 + 8 * i, tp[i]);
  c->ticket.len = 0;
  if (sbhttp3_buf_append(&c->ticket, head, sizeof(head)) != 0 || sbhttp3_buf_append(&c->ticket, d.data, d.size) != 0)
    c->ticket.len = 0;
  gnutls_free(d.data);
  return 0;
}

int tls_init(sbh3_conn *c, const char *server_name) {
  const sbh3_config *cfg = c->cfg;
  unsigned flags = (cfg->is_server ? GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET : GNUTLS_CLIENT) |
                   GNUTLS_NO_END_OF_EARLY_DATA | (cfg->early_data ? GNUTLS_ENABLE_EARLY_DATA : 0);
  if (gnutls_init(&c->tls, flags) != 0) return -1;
  if (gnutls_priority_set_direct(c->tls, PRIORITY, NULL) != 0) return -1;
  int rv = cfg->is_server ? ngtcp2_crypto_gnutls_configure_server_session(c->tls)
                          : ngtcp2_crypto_gnutls_configure_client_session(c->tls);
  if (rv != 0) return -1;
  gnutls_handshake_set_read_function(c->tls, tls_send_crypto);
  c->ref.get_conn = get_conn;
  c->ref.user_data = c;
  gnutls_session_set_ptr(c->tls, &c->ref);
  if (gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, cfg->cred) != 0) return -1;
  gnutls_datum_t alpn = {(unsigned char *)"h3", 2};
  unsigned alpn_flags = GNUTLS_ALPN_MANDATORY | (cfg->is_server ? GNUTLS_ALPN_SERVER_PRECEDENCE : 0);
  if (gnutls_alpn_set_protocols(c->tls, &alpn, 1, alpn_flags) != 0) return -1;
  if (cfg->is_server) {
    if (cfg->verify == SBWIRE_TLS_VERIFY_PEER) {
      gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_REQUIRE);
      gnutls_session_set_verify_cert(c->tls, NULL, 0);
    }
    if (cfg->ticket_lifetime) {
      if (gnutls_session_ticket_enable_server(c->tls, &cfg->ticket_key) != 0) return -1;
      gnutls_db_set_cache_expiration(c->tls, (int)cfg->ticket_lifetime);
    }
    if (cfg->early_data && cfg->anti_replay) {
      gnutls_anti_replay_enable(c->tls, cfg->anti_replay);
      /* QUIC requires max_early_data_size 0xffffffff in tickets that allow 0-RTT (RFC 9001 4.6.1). */
      gnutls_record_set_max_early_data_size(c->tls, 0xffffffffu);
    }
  } else {
    gnutls_handshake_set_hook_function(c->tls, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST, on_ticket);
    if (server_name && *server_name) {
      struct in6_addr tmp;
      int numeric = inet_pton(AF_INET, server_name, &tmp) == 1 || inet_pton(AF_INET6, server_name, &tmp) == 1;
      if (!numeric) gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, server_name, strlen(server_name));
    }
    if (cfg->verify == SBWIRE_TLS_VERIFY_PEER) {
      if (!server_name || !*server_name) return -1;
      c->server_name = strdup(server_name);
      if (!c->server_name) return -1;
      gnutls_session_set_verify_cert(c->tls, c->server_name, 0);
    }
  }
  ngtcp2_conn_set_tls_native_handle(c->qc, c->tls);
  return 0;
}

int tls_resume(sbh3_conn *c, const uint8_t *ticket, size_t len, ngtcp2_transport_params *p) {
  if (!ticket || len <= TICKET_HEAD || len - TICKET_HEAD > UINT32_MAX) return SBWIRE_ERR_INVALID;
  uint32_t magic, count;
  memcpy(&magic, ticket, 4);
  memcpy(&count, ticket + 4, 4);
  if (magic != TICKET_MAGIC || count != TICKET_TP_COUNT) return SBWIRE_ERR_INVALID;
  if (c->hs_sent || c->h3.hc) return SBWIRE_ERR_INVALID; /* only before the first flight */
  if (gnutls_session_set_data(c->tls, ticket + TICKET_HEAD, len - TICKET_HEAD) != 0) return SBWIRE_ERR_TLS;
  ngtcp2_transport_params_default(p);
  const uint8_t *tp = ticket + 8;
  p->initial_max_streams_bidi = sbwire_get_u64(tp);
  p->initial_max_streams_uni = sbwire_get_u64(tp + 8);
  p->initial_max_stream_data_bidi_local = sbwire_get_u64(tp + 16);
  p->initial_max_stream_data_bidi_remote = sbwire_get_u64(tp + 24);
  p->initial_max_stream_data_uni = sbwire_get_u64(tp + 32);
  p->initial_max_data = sbwire_get_u64(tp + 40);
  p->active_connection_id_limit = sbwire_get_u64(tp + 48);
  p->max_udp_payload_size = sbwire_get_u64(tp + 56);
  return 0;
}

int tls_state(sbh3_conn *c) {
  int st = 0;
  if (ngtcp2_conn_get_handshake_completed(c->qc)) {
    st |= SBWIRE_TLS_ESTABLISHED;
    if (gnutls_session_is_resumed(c->tls)) st |= SBWIRE_TLS_RESUMED;
    if ((gnutls_session_get_flags(c->tls) & GNUTLS_SFLAGS_EARLY_DATA) && (c->srv || c->early_attempt))
      st |= SBWIRE_TLS_EARLY_ACCEPTED;
  }
  if (c->ticket.len) st |= SBWIRE_TLS_TICKET;
  if (c->early_attempt) st |= SBWIRE_TLS_EARLY_ATTEMPTED;
  return st;
}

/* Copies text into buf (truncated to cap); its length. */
static int put_text(uint8_t *buf, size_t cap, const char *text, size_t n) {
  if (!text) return 0;
  if (n > cap) n = cap;
  memcpy(buf, text, n);
  return (int)n;
}

int tls_info(sbh3_conn *c, int kind, uint8_t *buf, size_t cap) {
  if (!ngtcp2_conn_get_handshake_completed(c->qc)) return 0;
  const char *t = NULL;
  switch (kind) {
  case SBWIRE_TLS_INFO_VERSION: t = gnutls_protocol_get_name(gnutls_protocol_get_version(c->tls)); break;
  case SBWIRE_TLS_INFO_SUITE: t = gnutls_ciphersuite_get(c->tls); break;
  case SBWIRE_TLS_INFO_GROUP: t = gnutls_group_get_name(gnutls_group_get(c->tls)); break;
  case SBWIRE_TLS_INFO_ALPN: {
    gnutls_datum_t p;
    if (gnutls_alpn_get_selected_protocol(c->tls, &p) != 0) return 0;
    return put_text(buf, cap, (const char *)p.data, p.size);
  }
  case SBWIRE_TLS_INFO_PEER_SUBJECT: return sb_tls_peer_subject(c->tls, buf, cap);
  default: return SBWIRE_ERR_INVALID;
  }
  return put_text(buf, cap, t, t ? strlen(t) : 0);
}

int tls_export(sbh3_conn *c, const uint8_t *label, size_t label_len, const uint8_t *context, size_t context_len,
               uint8_t *out, size_t out_len) {
  if (!label || label_len == 0 || !out || out_len == 0 || out_len > 65535 || (context_len && !context))
    return SBWIRE_ERR_INVALID;
  if (c->closed) return SBWIRE_ERR_CLOSED;
  if (!ngtcp2_conn_get_handshake_completed(c->qc)) return SBWIRE_ERR_INVALID;
  if (gnutls_prf_rfc5705(c->tls, label_len, (const char *)label, context_len, (const char *)context, out_len,
                         (char *)out) != 0)
    return SBWIRE_ERR_TLS;
  return (int)out_len;
}

int sbh3_conn_ticket(sbh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || c->srv || !buf) return SBWIRE_ERR_INVALID;
  if (!c->ticket.len) return SBWIRE_ERR_DONE;
  if (cap < c->ticket.len) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  memcpy(buf, c->ticket.p, c->ticket.len);
  int n = (int)c->ticket.len;
  c->ticket.len = 0;
  return n;
}

int sbh3_conn_tls_state(sbh3_conn *c) { return c ? tls_state(c) : SBWIRE_ERR_INVALID; }

int sbh3_conn_tls_info(sbh3_conn *c, int kind, uint8_t *buf, size_t cap) {
  return c && buf ? tls_info(c, kind, buf, cap) : SBWIRE_ERR_INVALID;
}

int64_t sbh3_conn_handshake_bytes(sbh3_conn *c, int sent) {
  if (!c) return SBWIRE_ERR_INVALID;
  return (int64_t)(sent ? c->hs_sent : c->hs_recv);
}

int sbh3_conn_export(sbh3_conn *c, const uint8_t *label, size_t label_len, const uint8_t *context, size_t context_len,
                     uint8_t *out, size_t out_len) {
  return c ? tls_export(c, label, label_len, context, context_len, out, out_len) : SBWIRE_ERR_INVALID;
}
