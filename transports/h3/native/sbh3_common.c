/* sbh3 common parts: clock, addresses, randomness, configuration. */
#define _GNU_SOURCE
#include "sbh3_int.h"
#include "../../native/sb_tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>

uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int parse_addr(ngtcp2_sockaddr_union *su, ngtcp2_socklen *len, const char *ip, uint16_t port) {
  if (!ip) return -1;
  memset(su, 0, sizeof(*su));
  if (strchr(ip, ':')) {
    su->in6.sin6_family = AF_INET6;
    su->in6.sin6_port = htons(port);
    if (inet_pton(AF_INET6, ip, &su->in6.sin6_addr) != 1) return -1;
    *len = sizeof(su->in6);
  } else {
    su->in.sin_family = AF_INET;
    su->in.sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &su->in.sin_addr) != 1) return -1;
    *len = sizeof(su->in);
  }
  return 0;
}

void rand_bytes(uint8_t *dest, size_t len) {
  if (gnutls_rnd(GNUTLS_RND_NONCE, dest, len) != 0) {
    /* gnutls_rnd does not fail in practice; keep the output defined anyway. */
    for (size_t i = 0; i < len; i++) dest[i] = (uint8_t)random();
  }
}

sbh3_config *sbh3_config_new(int is_server) {
  sbh3_config *cfg = calloc(1, sizeof(*cfg));
  if (!cfg) return NULL;
  if (gnutls_certificate_allocate_credentials(&cfg->cred) != 0) {
    free(cfg);
    return NULL;
  }
  cfg->refs = 1;
  cfg->is_server = is_server ? 1 : 0;
  cfg->verify = is_server ? SBWIRE_TLS_VERIFY_NONE : SBWIRE_TLS_VERIFY_PEER;
  cfg->idle_ms = 30000;
  cfg->max_body = 64ull << 20;
  cfg->max_field_section = SBHTTP3_MAX_FIELD_SECTION;
  cfg->max_udp_payload = 0;
  cfg->max_recv_udp_payload = MAX_UDP;
  cfg->handshake_ms = 5000;
  cfg->max_conn_queued = 64ull << 20;
  cfg->max_total_queued = 256ull << 20;
  cfg->stall_ms = 30000;
  cfg->versions[0] = NGTCP2_PROTO_VER_V1;
  cfg->nversions = 1;
  return cfg;
}

/* Releases the ticket key and anti-replay state of cfg. */
static void config_tls_clear(sbh3_config *cfg) {
  if (cfg->ticket_key.data) {
    gnutls_memset(cfg->ticket_key.data, 0, cfg->ticket_key.size);
    gnutls_free(cfg->ticket_key.data);
    cfg->ticket_key.data = NULL;
  }
  if (cfg->anti_replay) gnutls_anti_replay_deinit(cfg->anti_replay);
  cfg->anti_replay = NULL;
  free(cfg->replay);
  cfg->replay = NULL;
}

void config_unref(sbh3_config *cfg) {
  if (!cfg || --cfg->refs > 0) return;
  config_tls_clear(cfg);
  sbhttp3_buf_free(&cfg->token);
  gnutls_certificate_free_credentials(cfg->cred);
  free(cfg);
}

void sbh3_config_free(sbh3_config *cfg) { config_unref(cfg); }

int sbh3_config_set_cert(sbh3_config *cfg, const uint8_t *cert, size_t cert_len, const uint8_t *key, size_t key_len) {
  if (!cfg || !cert || !key || cert_len > UINT32_MAX || key_len > UINT32_MAX) return SBWIRE_ERR_INVALID;
  if (sb_tls_cred_set_cert(cfg->cred, cert, cert_len, key, key_len) < 0) return SBWIRE_ERR_TLS;
  cfg->has_cert = 1;
  return 0;
}

int sbh3_config_add_ca(sbh3_config *cfg, const uint8_t *pem, size_t len) {
  if (!cfg || !pem || len > UINT32_MAX) return SBWIRE_ERR_INVALID;
  int n = sb_tls_cred_add_ca(cfg->cred, pem, len);
  if (n <= 0) return SBWIRE_ERR_TLS;
  return n;
}

int sbh3_config_set_verify(sbh3_config *cfg, int mode) {
  if (!cfg || (mode != SBWIRE_TLS_VERIFY_NONE && mode != SBWIRE_TLS_VERIFY_PEER)) return SBWIRE_ERR_INVALID;
  cfg->verify = mode;
  return 0;
}

int sbh3_config_set_idle_timeout(sbh3_config *cfg, uint32_t ms) {
  if (!cfg || ms == 0) return SBWIRE_ERR_INVALID;
  cfg->idle_ms = ms;
  return 0;
}

int sbh3_config_set_max_udp_payload(sbh3_config *cfg, uint32_t bytes) {
  if (!cfg || bytes < 1200 || bytes > MAX_UDP) return SBWIRE_ERR_INVALID;
  cfg->max_udp_payload = bytes;
  return 0;
}

int sbh3_config_get_max_udp_payload(const sbh3_config *cfg) {
  if (!cfg) return SBWIRE_ERR_INVALID;
  return (int)cfg->max_udp_payload;
}

int sbh3_config_set_max_recv_udp_payload(sbh3_config *cfg, uint32_t bytes) {
  if (!cfg || bytes < 1200 || bytes > MAX_UDP) return SBWIRE_ERR_INVALID;
  cfg->max_recv_udp_payload = bytes;
  return 0;
}

int sbh3_config_set_handshake_timeout(sbh3_config *cfg, uint32_t ms) {
  if (!cfg || ms == 0) return SBWIRE_ERR_INVALID;
  cfg->handshake_ms = ms;
  return 0;
}

int sbh3_config_set_send_queue(sbh3_config *cfg, uint64_t conn_bytes, uint64_t total_bytes, uint32_t stall_ms) {
  if (!cfg || conn_bytes == 0 || total_bytes < conn_bytes || stall_ms == 0) return SBWIRE_ERR_INVALID;
  cfg->max_conn_queued = conn_bytes;
  cfg->max_total_queued = total_bytes;
  cfg->stall_ms = stall_ms;
  return 0;
}

int sbh3_config_set_retry(sbh3_config *cfg, int on) {
  if (!cfg || !cfg->is_server) return SBWIRE_ERR_INVALID;
  cfg->retry = on ? 1 : 0;
  return 0;
}

int sbh3_config_set_token(sbh3_config *cfg, const uint8_t *token, size_t len) {
  if (!cfg || cfg->is_server || (len && !token)) return SBWIRE_ERR_INVALID;
  cfg->token.len = 0;
  return sbhttp3_buf_append(&cfg->token, token, len) == 0 ? 0 : SBWIRE_ERR_NOMEM;
}

int sbh3_config_set_versions(sbh3_config *cfg, const uint32_t *versions, size_t n) {
  if (!cfg || !versions || n == 0 || n > 4) return SBWIRE_ERR_INVALID;
  int has_v1 = 0;
  for (size_t i = 0; i < n; i++) {
    if (!ngtcp2_is_supported_version(versions[i])) return SBWIRE_ERR_INVALID;
    has_v1 |= versions[i] == NGTCP2_PROTO_VER_V1;
  }
  if (!has_v1) return SBWIRE_ERR_INVALID;
  memcpy(cfg->versions, versions, n * sizeof(*versions));
  cfg->nversions = n;
  return 0;
}

int sbh3_config_set_ecn(sbh3_config *cfg, int on) {
  if (!cfg) return SBWIRE_ERR_INVALID;
  cfg->no_ecn = on ? 0 : 1;
  return 0;
}

int sbh3_config_set_cc(sbh3_config *cfg, int algo) {
  if (!cfg || algo < SBH3_CC_HOST || algo > SBH3_CC_BBR2) return SBWIRE_ERR_INVALID;
  cfg->cc = algo;
  return 0;
}

/*
 * The host's TCP congestion controller, so that h3 and h2 cross a lossy link under the same
 * kind of controller: loss-based CUBIC collapses to a few Mbit/s at 2 % random loss and 50 ms,
 * where the kernel's BBR (this lab's hosts) keeps its rate. Unknown or unreadable: CUBIC.
 */
static int host_cc(void) {
  char name[32] = {0};
  FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
  if (f) {
    if (!fgets(name, sizeof(name), f)) name[0] = 0;
    fclose(f);
  }
  name[strcspn(name, "\n")] = 0;
  if (strcmp(name, "bbr") == 0) return SBH3_CC_BBR;
  if (strcmp(name, "reno") == 0) return SBH3_CC_RENO;
  return SBH3_CC_CUBIC;
}

ngtcp2_cc_algo cc_algo(int cc) {
  switch (cc == SBH3_CC_HOST ? host_cc() : cc) {
  case SBH3_CC_RENO: return NGTCP2_CC_ALGO_RENO;
  case SBH3_CC_BBR: return NGTCP2_CC_ALGO_BBR;
  case SBH3_CC_BBR2: return NGTCP2_CC_ALGO_BBR2;
  default: return NGTCP2_CC_ALGO_CUBIC;
  }
}

int sbh3_config_set_max_body(sbh3_config *cfg, uint64_t bytes) {
  if (!cfg || bytes == 0) return SBWIRE_ERR_INVALID;
  cfg->max_body = bytes;
  return 0;
}

int sbh3_config_set_max_field_section(sbh3_config *cfg, uint64_t bytes) {
  if (!cfg || bytes == 0) return SBWIRE_ERR_INVALID;
  cfg->max_field_section = bytes;
  return 0;
}

int deadline_to_ms(uint64_t deadline) {
  if (deadline == UINT64_MAX) return SBWIRE_ERR_DONE;
  uint64_t now = now_ns();
  if (deadline <= now) return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000;
  return ms > INT32_MAX ? INT32_MAX : (int)ms;
}
