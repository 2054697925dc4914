/*
 * sbh2_tls: TLS 1.3 on GnuTLS for the h2 module (see sbh2_tls.h for the contract).
 *
 * GnuTLS reads and writes through two memory callbacks: pull takes ciphertext
 * the caller handed to sbh2_tls_recv (first what an earlier call left over,
 * then the caller's own buffer, borrowed for the duration of the call), and
 * push appends ciphertext to an output buffer that sbh2_tls_send drains.
 * Nothing blocks and nothing calls back into the caller.
 */
#include "sbh2_tls.h"

#include "sbh2_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../native/sb_tls.h"

/* Plaintext scratch of the combined HTTP/2 paths: one TLS record's worth at least. */
#define PLAIN_CAP (64 * 1024)
#define ERR_LEN 256
/* Largest ciphertext buffer a session keeps between calls. */
#define KEEP_CAP (16 * 1024)

struct sbh2_tls_config {
  int refs;
  int is_server;
  int verify;
  int has_ca;
  int trust_loaded;
  gnutls_certificate_credentials_t cred;
  gnutls_datum_t ticket_key; /* master key; GnuTLS derives the rotating ticket keys from it */
  uint32_t ticket_lifetime;
  /* Plaintext scratch of the combined paths, shared by the config's sessions: calls never
     interleave (one caller thread, no callbacks out), and 500 idle connections do not hold
     500 copies. Allocated on first use. */
  uint8_t *plain;
};

struct sbh2_tls {
  sbh2_tls_config *cfg;
  gnutls_session_t s;
  char *server_name;
  /* ciphertext received and not yet pulled: leftovers kept, the caller's buffer borrowed */
  uint8_t *in;
  size_t in_len, in_off, in_cap;
  const uint8_t *borrow;
  size_t borrow_len, borrow_off;
  /* ciphertext produced and not yet handed out */
  uint8_t *out;
  size_t out_len, out_off, out_cap;
  uint32_t hs_in, hs_out;
  unsigned established : 1, failed : 1, peer_closed : 1, ticket_new : 1, bye_sent : 1, starved : 1;
  char err[ERR_LEN];
};

/* ---- helpers ---- */

static void set_err(sbh2_tls *t, const char *fmt, ...) {
  if (t->err[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->err, sizeof t->err, fmt, ap);
  va_end(ap);
  for (char *p = t->err; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  size_t n = strlen(t->err);
  while (n > 0 && (t->err[n - 1] == ' ' || t->err[n - 1] == '.')) t->err[--n] = 0;
}

/* Grows a buffer to hold need bytes (doubling); returns 0 or -1. */
static int grow(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 4096;
  while (n < need) n *= 2;
  uint8_t *p = realloc(*buf, n);
  if (!p) return -1;
  *buf = p;
  *cap = n;
  return 0;
}

/* Records a fatal GnuTLS error with a one-line reason; returns SBWIRE_ERR_TLS. */
static int fail(sbh2_tls *t, int rv, const char *what) {
  t->failed = 1;
  if (rv == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR || rv == GNUTLS_E_CERTIFICATE_ERROR) {
    unsigned status = gnutls_session_get_verify_cert_status(t->s);
    gnutls_datum_t txt = {0};
    if (status && gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &txt, 0) == 0) {
      set_err(t, "%s: %s", what, (const char *)txt.data);
      gnutls_free(txt.data);
    }
  } else if (rv == GNUTLS_E_FATAL_ALERT_RECEIVED) {
    const char *name = gnutls_alert_get_name(gnutls_alert_get(t->s));
    set_err(t, "%s: the peer sent the alert \"%s\"", what, name ? name : "unknown");
  } else if (rv == GNUTLS_E_NO_APPLICATION_PROTOCOL) {
    set_err(t, "%s: the peer does not speak HTTP/2 over TLS (no ALPN h2)", what);
  } else if (rv == GNUTLS_E_NO_CERTIFICATE_FOUND && t->cfg->is_server) {
    set_err(t, "%s: the client sent no certificate", what);
  }
  set_err(t, "%s: %s", what, gnutls_strerror(rv));
  return SBWIRE_ERR_TLS;
}

/* ---- GnuTLS transport callbacks ---- */

static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *data, size_t size) {
  sbh2_tls *t = ptr;
  size_t done = 0;
  if (t->in_off < t->in_len) {
    size_t n = t->in_len - t->in_off;
    if (n > size) n = size;
    memcpy(data, t->in + t->in_off, n);
    t->in_off += n;
    done = n;
  }
  if (done < size && t->borrow_off < t->borrow_len) {
    size_t n = t->borrow_len - t->borrow_off;
    if (n > size - done) n = size - done;
    memcpy((uint8_t *)data + done, t->borrow + t->borrow_off, n);
    t->borrow_off += n;
    done += n;
  }
  if (done == 0) {
    t->starved = 1;
    gnutls_transport_set_errno(t->s, EAGAIN);
    return -1;
  }
  if (!t->established) t->hs_in += (uint32_t)done;
  return (ssize_t)done;
}

/* GnuTLS writes ciphertext: appended to the output buffer. */
static ssize_t tls_push(gnutls_transport_ptr_t ptr, const void *data, size_t size) {
  sbh2_tls *t = ptr;
  if (t->out_off == t->out_len) t->out_off = t->out_len = 0;
  if (grow(&t->out, &t->out_cap, t->out_len + size) != 0) {
    gnutls_transport_set_errno(t->s, ENOMEM);
    return -1;
  }
  memcpy(t->out + t->out_len, data, size);
  t->out_len += size;
  if (!t->established) t->hs_out += (uint32_t)size;
  return (ssize_t)size;
}

/* Tells GnuTLS whether ciphertext is waiting; never waits. */
static int tls_pull_timeout(gnutls_transport_ptr_t ptr, unsigned ms) {
  (void)ms;
  sbh2_tls *t = ptr;
  return (t->in_off < t->in_len || t->borrow_off < t->borrow_len) ? 1 : 0;
}

/* Notes a NewSessionTicket the client received. */
static int on_ticket(gnutls_session_t s, unsigned htype, unsigned when, unsigned incoming,
                     const gnutls_datum_t *msg) {
  (void)htype;
  (void)when;
  (void)msg;
  if (incoming) {
    sbh2_tls *t = gnutls_session_get_ptr(s);
    if (t) t->ticket_new = 1;
  }
  return 0;
}

/* ---- config ---- */

sbh2_tls_config *sbh2_tls_config_new(int is_server) {
  sbh2_tls_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg) return NULL;
  if (gnutls_certificate_allocate_credentials(&cfg->cred) != 0) {
    free(cfg);
    return NULL;
  }
  cfg->refs = 1;
  cfg->is_server = is_server ? 1 : 0;
  cfg->verify = is_server ? SBWIRE_TLS_VERIFY_NONE : SBWIRE_TLS_VERIFY_PEER;
  return cfg;
}

/* Drops one reference; the last one wipes the ticket key and frees everything. */
static void config_unref(sbh2_tls_config *cfg) {
  if (!cfg || --cfg->refs > 0) return;
  if (cfg->ticket_key.data) {
    gnutls_memset(cfg->ticket_key.data, 0, cfg->ticket_key.size);
    gnutls_free(cfg->ticket_key.data);
  }
  gnutls_certificate_free_credentials(cfg->cred);
  free(cfg->plain);
  free(cfg);
}

void sbh2_tls_config_free(sbh2_tls_config *cfg) { config_unref(cfg); }

int sbh2_tls_config_set_cert(sbh2_tls_config *cfg, const uint8_t *cert, uint32_t cert_len, const uint8_t *key,
                             uint32_t key_len) {
  if (!cfg || !cert || !key || !cert_len || !key_len) return SBWIRE_ERR_INVALID;
  return sb_tls_cred_set_cert(cfg->cred, cert, cert_len, key, key_len) < 0 ? SBWIRE_ERR_TLS : 0;
}

int sbh2_tls_config_add_ca(sbh2_tls_config *cfg, const uint8_t *pem, uint32_t len) {
  if (!cfg || !pem || !len) return SBWIRE_ERR_INVALID;
  int n = sb_tls_cred_add_ca(cfg->cred, pem, len);
  if (n <= 0) return SBWIRE_ERR_TLS;
  cfg->has_ca = 1;
  return n;
}

int sbh2_tls_config_set_verify(sbh2_tls_config *cfg, int mode) {
  if (!cfg || (mode != SBWIRE_TLS_VERIFY_NONE && mode != SBWIRE_TLS_VERIFY_PEER)) return SBWIRE_ERR_INVALID;
  cfg->verify = mode;
  return 0;
}

int sbh2_tls_config_set_tickets(sbh2_tls_config *cfg, uint32_t lifetime_s) {
  if (!cfg || !cfg->is_server) return SBWIRE_ERR_INVALID;
  if (lifetime_s && !cfg->ticket_key.data && gnutls_session_ticket_key_generate(&cfg->ticket_key) != 0)
    return SBWIRE_ERR_NOMEM;
  cfg->ticket_lifetime = lifetime_s;
  return 0;
}

/* ---- session ---- */

/* Runs the handshake as far as the received ciphertext allows; checks ALPN at the end. */
static int drive_handshake(sbh2_tls *t) {
  if (t->established) return 0;
  if (t->failed) return SBWIRE_ERR_TLS;
  int rv;
  do {
    rv = gnutls_handshake(t->s);
  } while (rv < 0 && rv != GNUTLS_E_AGAIN && !gnutls_error_is_fatal(rv));
  if (rv == GNUTLS_E_AGAIN) return 0;
  if (rv < 0) {
    /* GnuTLS leaves the alert to the caller; it lands in the output for the peer to read. */
    if (rv != GNUTLS_E_FATAL_ALERT_RECEIVED) gnutls_alert_send_appropriate(t->s, rv);
    return fail(t, rv, "TLS handshake failed");
  }
  gnutls_datum_t alpn = {0};
  if (gnutls_alpn_get_selected_protocol(t->s, &alpn) != 0 || alpn.size != 2 || memcmp(alpn.data, "h2", 2) != 0) {
    gnutls_alert_send(t->s, GNUTLS_AL_FATAL, GNUTLS_A_NO_APPLICATION_PROTOCOL);
    return fail(t, GNUTLS_E_NO_APPLICATION_PROTOCOL, "TLS handshake failed");
  }
  t->established = 1;
  return 0;
}

sbh2_tls *sbh2_tls_new(sbh2_tls_config *cfg, const char *server_name, const uint8_t *ticket, uint32_t ticket_len) {
  if (!cfg) return NULL;
  if (!cfg->is_server && cfg->verify == SBWIRE_TLS_VERIFY_PEER && (!server_name || !*server_name)) return NULL;
  if (!cfg->is_server && cfg->verify == SBWIRE_TLS_VERIFY_PEER && !cfg->has_ca && !cfg->trust_loaded) {
    if (gnutls_certificate_set_x509_system_trust(cfg->cred) < 0) return NULL;
    cfg->trust_loaded = 1;
  }
  sbh2_tls *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cfg = cfg;
  cfg->refs++;
  unsigned flags = (cfg->is_server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NONBLOCK;
  if (gnutls_init(&t->s, flags) != 0) {
    t->s = NULL;
    goto fail;
  }
  if (gnutls_priority_set_direct(t->s, SB_TLS_PRIORITY, NULL) != 0) goto fail;
  if (gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, cfg->cred) != 0) goto fail;
  gnutls_datum_t alpn = {(unsigned char *)"h2", 2};
  unsigned alpn_flags = GNUTLS_ALPN_MANDATORY | (cfg->is_server ? GNUTLS_ALPN_SERVER_PRECEDENCE : 0);
  if (gnutls_alpn_set_protocols(t->s, &alpn, 1, alpn_flags) != 0) goto fail;
  gnutls_session_set_ptr(t->s, t);
  gnutls_transport_set_ptr(t->s, t);
  gnutls_transport_set_push_function(t->s, tls_push);
  gnutls_transport_set_pull_function(t->s, tls_pull);
  gnutls_transport_set_pull_timeout_function(t->s, tls_pull_timeout);
  gnutls_handshake_set_timeout(t->s, 0); /* the caller's timers bound the handshake */
  if (cfg->is_server) {
    if (cfg->verify == SBWIRE_TLS_VERIFY_PEER) {
      gnutls_certificate_server_set_request(t->s, GNUTLS_CERT_REQUIRE);
      gnutls_session_set_verify_cert(t->s, NULL, 0);
    }
    if (cfg->ticket_lifetime) {
      if (gnutls_session_ticket_enable_server(t->s, &cfg->ticket_key) != 0) goto fail;
      gnutls_db_set_cache_expiration(t->s, (int)cfg->ticket_lifetime);
    }
  } else {
    if (server_name && *server_name) {
      struct in6_addr tmp;
      int numeric = inet_pton(AF_INET, server_name, &tmp) == 1 || inet_pton(AF_INET6, server_name, &tmp) == 1;
      if (!numeric && gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, server_name, strlen(server_name)) != 0)
        goto fail;
    }
    if (cfg->verify == SBWIRE_TLS_VERIFY_PEER) {
      t->server_name = strdup(server_name); /* GnuTLS keeps the pointer */
      if (!t->server_name) goto fail;
      gnutls_session_set_verify_cert(t->s, t->server_name, 0);
    }
    gnutls_handshake_set_hook_function(t->s, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST, on_ticket);
    if (ticket && ticket_len) {
      /* A ticket GnuTLS cannot parse is ignored: the handshake is then a full one. */
      (void)gnutls_session_set_data(t->s, ticket, ticket_len);
    }
    if (drive_handshake(t) < 0) goto fail; /* queues the ClientHello */
  }
  return t;
fail:
  sbh2_tls_free(t);
  return NULL;
}

void sbh2_tls_free(sbh2_tls *t) {
  if (!t) return;
  if (t->s) gnutls_deinit(t->s);
  free(t->server_name);
  free(t->in);
  free(t->out);
  config_unref(t->cfg);
  free(t);
}

/* Keeps the part of the borrowed input GnuTLS did not pull; returns 0 or SBWIRE_ERR_NOMEM. */
static int keep_leftover(sbh2_tls *t) {
  size_t rest = t->borrow_len - t->borrow_off;
  int rv = 0;
  if (rest) {
    if (t->in_off == t->in_len) t->in_off = t->in_len = 0;
    if (grow(&t->in, &t->in_cap, t->in_len + rest) != 0) {
      rv = SBWIRE_ERR_NOMEM;
    } else {
      memcpy(t->in + t->in_len, t->borrow + t->borrow_off, rest);
      t->in_len += rest;
    }
  }
  t->borrow = NULL;
  t->borrow_len = t->borrow_off = 0;
  return rv;
}

int sbh2_tls_recv(sbh2_tls *t, const uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t cap) {
  if (!t || (in_len && !in) || (cap && !out)) return SBWIRE_ERR_INVALID;
  if (t->failed) return SBWIRE_ERR_TLS;
  t->borrow = in;
  t->borrow_len = in_len;
  t->borrow_off = 0;
  int rv = drive_handshake(t);
  uint32_t n = 0;
  int interrupted = 0;
  while (rv == 0 && t->established && n < cap && !t->peer_closed) {
    t->starved = 0;
    ssize_t r = gnutls_record_recv(t->s, out + n, cap - n);
    if (r > 0) {
      n += (uint32_t)r;
    } else if (r == 0) {
      t->peer_closed = 1;
    } else if (r == GNUTLS_E_AGAIN) {
      /* GnuTLS also says AGAIN after a post-handshake message (a ticket) with records still buffered. */
      if (t->starved || ++interrupted > 64) break;
    } else if (gnutls_error_is_fatal((int)r)) {
      if (r != GNUTLS_E_FATAL_ALERT_RECEIVED) gnutls_alert_send_appropriate(t->s, (int)r);
      rv = fail(t, (int)r, "TLS connection failed");
    }
  }
  int kept = keep_leftover(t);
  if (n > 0) return (int)n; /* a failure after plaintext shows on the next call */
  return rv < 0 ? rv : kept;
}

/* Encrypts len bytes into the output buffer. */
static int encrypt_all(sbh2_tls *t, const uint8_t *p, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t r = gnutls_record_send(t->s, p + off, len - off);
    if (r > 0) {
      off += (size_t)r;
    } else if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
      continue; /* not reached: the memory push never blocks */
    } else {
      return fail(t, (int)r, "TLS connection failed");
    }
  }
  return 0;
}

/* Copies pending ciphertext into out; returns its length or SBWIRE_ERR_DONE. */
static int drain_out(sbh2_tls *t, uint8_t *out, uint32_t cap) {
  size_t n = t->out_len - t->out_off;
  if (n == 0) return t->failed ? SBWIRE_ERR_TLS : SBWIRE_ERR_DONE;
  if (n > cap) n = cap;
  memcpy(out, t->out + t->out_off, n);
  t->out_off += n;
  if (t->out_off == t->out_len) {
    t->out_off = t->out_len = 0;
    if (t->out_cap > KEEP_CAP) { /* a large response passed: do not hold its buffer while idle */
      free(t->out);
      t->out = NULL;
      t->out_cap = 0;
    }
  }
  return (int)n;
}

int sbh2_tls_send(sbh2_tls *t, const uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t cap) {
  if (!t || (in_len && !in) || !out || !cap) return SBWIRE_ERR_INVALID;
  if (in_len) {
    if (t->failed) return SBWIRE_ERR_TLS;
    if (!t->established || t->bye_sent) return SBWIRE_ERR_CLOSED;
    int rv = encrypt_all(t, in, in_len);
    if (rv < 0) return rv;
  }
  return drain_out(t, out, cap);
}

int sbh2_tls_shutdown(sbh2_tls *t) {
  if (!t) return SBWIRE_ERR_INVALID;
  if (!t->established || t->failed || t->bye_sent) return 0;
  t->bye_sent = 1;
  int rv = gnutls_bye(t->s, GNUTLS_SHUT_WR);
  return rv == 0 || rv == GNUTLS_E_AGAIN ? 0 : fail(t, rv, "TLS close failed");
}

int sbh2_tls_state(sbh2_tls *t) {
  if (!t) return SBWIRE_ERR_INVALID;
  int st = 0;
  if (t->established) st |= SBWIRE_TLS_ESTABLISHED;
  if (t->established && gnutls_session_is_resumed(t->s)) st |= SBWIRE_TLS_RESUMED;
  if (t->peer_closed) st |= SBWIRE_TLS_PEER_CLOSED;
  if (t->ticket_new) st |= SBWIRE_TLS_TICKET;
  if (t->failed) st |= SBWIRE_TLS_FAILED;
  return st;
}

/* Copies text into buf (truncated to cap); returns the length written. */
static int put_text(const char *s, size_t len, uint8_t *buf, uint32_t cap) {
  if (len > cap) len = cap;
  memcpy(buf, s, len);
  return (int)len;
}

int sbh2_tls_info(sbh2_tls *t, int kind, uint8_t *buf, uint32_t cap) {
  if (!t || !buf) return SBWIRE_ERR_INVALID;
  if (!t->established) return 0;
  const char *s = NULL;
  switch (kind) {
  case SBWIRE_TLS_INFO_VERSION:
    s = gnutls_protocol_get_name(gnutls_protocol_get_version(t->s));
    break;
  case SBWIRE_TLS_INFO_SUITE:
    s = gnutls_ciphersuite_get(t->s);
    break;
  case SBWIRE_TLS_INFO_GROUP:
    s = gnutls_group_get_name(gnutls_group_get(t->s));
    break;
  case SBWIRE_TLS_INFO_ALPN: {
    gnutls_datum_t alpn = {0};
    if (gnutls_alpn_get_selected_protocol(t->s, &alpn) != 0) return 0;
    return put_text((const char *)alpn.data, alpn.size, buf, cap);
  }
  case SBWIRE_TLS_INFO_PEER_SUBJECT:
    return sb_tls_peer_subject(t->s, buf, cap);
  default:
    return SBWIRE_ERR_INVALID;
  }
  return s ? put_text(s, strlen(s), buf, cap) : 0;
}

int sbh2_tls_handshake_bytes(sbh2_tls *t, int sent) {
  if (!t) return SBWIRE_ERR_INVALID;
  return (int)(sent ? t->hs_out : t->hs_in);
}

int sbh2_tls_export(sbh2_tls *t, const uint8_t *label, uint32_t label_len, const uint8_t *context,
                    uint32_t context_len, uint8_t *out, uint32_t out_len) {
  if (!t || !label || !label_len || (context_len && !context) || !out || !out_len || out_len > 65535)
    return SBWIRE_ERR_INVALID;
  if (t->failed) return SBWIRE_ERR_CLOSED;
  if (!t->established) return SBWIRE_ERR_INVALID;
  /* RFC 8446 §7.5: an absent context and an empty one derive the same bytes. */
  int rv = gnutls_prf_rfc5705(t->s, label_len, (const char *)label, context_len,
                              context_len ? (const char *)context : "", out_len, (char *)out);
  return rv == 0 ? (int)out_len : SBWIRE_ERR_TLS;
}

int sbh2_tls_ticket(sbh2_tls *t, uint8_t *buf, uint32_t cap) {
  if (!t || !buf) return SBWIRE_ERR_INVALID;
  if (t->cfg->is_server || !t->ticket_new) return SBWIRE_ERR_DONE;
  gnutls_datum_t d = {0};
  if (gnutls_session_get_data2(t->s, &d) != 0) return SBWIRE_ERR_DONE;
  int rv;
  if (d.size > cap) {
    rv = SBWIRE_ERR_BUFFER_TOO_SHORT;
  } else {
    memcpy(buf, d.data, d.size);
    rv = (int)d.size;
    t->ticket_new = 0;
  }
  gnutls_free(d.data);
  return rv;
}

int sbh2_tls_error(sbh2_tls *t, uint8_t *buf, uint32_t cap) {
  if (!t || !buf) return SBWIRE_ERR_INVALID;
  return put_text(t->err, strlen(t->err), buf, cap);
}

/* ---- combined paths: TLS straight into and out of an HTTP/2 session ---- */

typedef int (*feed_fn)(void *session, const uint8_t *data, uint32_t len);
typedef int (*pull_fn)(void *session, uint8_t *out, uint32_t cap);

static int conn_feed(void *s, const uint8_t *d, uint32_t n) { return sbh2_conn_recv(s, d, n); }
static int conn_pull(void *s, uint8_t *o, uint32_t c) { return sbh2_conn_send(s, o, c); }
static int sconn_feed(void *s, const uint8_t *d, uint32_t n) { return sbh2_sconn_recv(s, d, n); }
static int sconn_pull(void *s, uint8_t *o, uint32_t c) { return sbh2_sconn_send(s, o, c); }

/* Returns the config's plaintext scratch, allocating it on first use. */
static uint8_t *scratch(sbh2_tls *t) {
  if (!t->cfg->plain) t->cfg->plain = malloc(PLAIN_CAP);
  return t->cfg->plain;
}

/* Decrypts into the scratch buffer and feeds each piece to the session; returns its last count. */
static int recv_into(void *session, feed_fn feed, sbh2_tls *t, const uint8_t *in, uint32_t in_len) {
  if (!session || !t) return SBWIRE_ERR_INVALID;
  uint8_t *plain = scratch(t);
  if (!plain) return SBWIRE_ERR_NOMEM;
  int ready = 0;
  int n = sbh2_tls_recv(t, in, in_len, plain, PLAIN_CAP);
  while (n > 0) {
    int r = feed(session, plain, (uint32_t)n);
    if (r < 0) return r;
    ready = r;
    if (n < PLAIN_CAP) break;
    n = sbh2_tls_recv(t, NULL, 0, plain, PLAIN_CAP);
  }
  if (n < 0) return n;
  /* close_notify with nothing new to poll reads like EOF */
  return t->peer_closed && ready == 0 ? SBWIRE_ERR_CLOSED : ready;
}

/* Encrypts the session's output until cap bytes of ciphertext wait; a finished session gets close_notify. */
static int send_from(void *session, pull_fn pull, sbh2_tls *t, uint8_t *out, uint32_t cap) {
  if (!session || !t || !out || !cap) return SBWIRE_ERR_INVALID;
  int finished = 0;
  if (t->established && !t->failed && !t->bye_sent) {
    uint8_t *plain = scratch(t);
    if (!plain) return SBWIRE_ERR_NOMEM;
    while (t->out_len - t->out_off < cap) {
      int m = pull(session, plain, PLAIN_CAP);
      if (m == SBWIRE_ERR_CLOSED) {
        finished = 1;
        sbh2_tls_shutdown(t);
        break;
      }
      if (m <= 0) break;
      int rv = encrypt_all(t, plain, (size_t)m);
      if (rv < 0) return rv;
    }
  } else if (t->bye_sent) {
    finished = 1;
  }
  int n = drain_out(t, out, cap);
  return n == SBWIRE_ERR_DONE && finished ? SBWIRE_ERR_CLOSED : n;
}

int sbh2_conn_recv_tls(sbh2_conn *conn, sbh2_tls *t, const uint8_t *in, uint32_t in_len) {
  return recv_into(conn, conn_feed, t, in, in_len);
}

int sbh2_conn_send_tls(sbh2_conn *conn, sbh2_tls *t, uint8_t *out, uint32_t cap) {
  int n = send_from(conn, conn_pull, t, out, cap);
  return n == SBWIRE_ERR_CLOSED ? SBWIRE_ERR_DONE : n; /* the client closes on its own schedule */
}

int sbh2_sconn_recv_tls(sbh2_sconn *conn, sbh2_tls *t, const uint8_t *in, uint32_t in_len) {
  return recv_into(conn, sconn_feed, t, in, in_len);
}

int sbh2_sconn_send_tls(sbh2_sconn *conn, sbh2_tls *t, uint8_t *out, uint32_t cap) {
  return send_from(conn, sconn_pull, t, out, cap);
}

int sbh2_sconn_send_fd(sbh2_sconn *conn, sbh2_tls *t, int fd, uint8_t *out, uint32_t cap) {
  if (!conn || fd < 0 || !out) return SBWIRE_ERR_INVALID;
  for (;;) {
    int n = t ? sbh2_sconn_send_tls(conn, t, out, cap) : sbh2_sconn_send(conn, out, cap);
    if (n <= 0) return n;
    ssize_t k = send(fd, out, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < n) { /* the kernel would wait (or send failed: the caller's own write says why) */
      if (k < 0) k = 0;
      memmove(out, out + k, (size_t)(n - k));
      return n - (int)k;
    }
  }
}
