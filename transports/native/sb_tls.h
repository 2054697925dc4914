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

#define SB_TLS_PRIORITY                                                       \
  "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"      \
  "+CHACHA20-POLY1305:%DISABLE_TLS13_COMPAT_MODE"

#endif /* SB_TLS_H */
