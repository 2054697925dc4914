/*
 * TLS settings shared by sbilab's native modules (the h2 module's TLS layer
 * and the h3 module), so h2 over TLS and h3 negotiate the same version,
 * cipher suites and key-exchange groups with the same GnuTLS.
 *
 * SB_TLS_PRIORITY: TLS 1.3 only; AES-128-GCM, AES-256-GCM, CHACHA20-POLY1305
 * in that order (TLS_AES_128_GCM_SHA256 is chosen between two GnuTLS peers);
 * key-exchange groups are GnuTLS 3.7's NORMAL list, SECP256R1 first (so two
 * GnuTLS peers use SECP256R1; a peer that offers a key share for another
 * group of the list, such as OpenSSL's X25519, gets that one). No
 * middlebox-compatibility records (dummy ChangeCipherSpec): QUIC forbids them
 * and TCP peers do not need them.
 */
#ifndef SB_TLS_H
#define SB_TLS_H

#include <stdint.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#define SB_TLS_PRIORITY                                                       \
  "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"      \
  "+CHACHA20-POLY1305:%DISABLE_TLS13_COMPAT_MODE"

/* Loads a PEM certificate chain and its private key into cred; 0, or GnuTLS's negative code. */
static inline int sb_tls_cred_set_cert(gnutls_certificate_credentials_t cred, const uint8_t *cert, size_t cert_len,
                                       const uint8_t *key, size_t key_len) {
  gnutls_datum_t c = {(unsigned char *)cert, (unsigned int)cert_len};
  gnutls_datum_t k = {(unsigned char *)key, (unsigned int)key_len};
  int rv = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
  return rv < 0 ? rv : 0;
}

/* Adds the PEM CA certificates to cred's trust list; how many were added (<= 0: none or failure). */
static inline int sb_tls_cred_add_ca(gnutls_certificate_credentials_t cred, const uint8_t *pem, size_t len) {
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned int)len};
  return gnutls_certificate_set_x509_trust_mem(cred, &d, GNUTLS_X509_FMT_PEM);
}

/* Writes the RFC 4514 subject of the peer's first certificate into buf (truncated to cap, no NUL); its length, 0 when none. */
static inline int sb_tls_peer_subject(gnutls_session_t s, uint8_t *buf, size_t cap) {
  unsigned n = 0;
  const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
  gnutls_x509_crt_t crt;
  if (!certs || n == 0 || gnutls_x509_crt_init(&crt) != 0) return 0;
  int len = 0;
  gnutls_datum_t dn = {0};
  if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 && gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
    len = (int)(dn.size < cap ? dn.size : cap);
    memcpy(buf, dn.data, (size_t)len);
    gnutls_free(dn.data);
  }
  gnutls_x509_crt_deinit(crt);
  return len;
}

#endif /* SB_TLS_H */
