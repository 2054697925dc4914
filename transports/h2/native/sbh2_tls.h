/*
 * sbh2_tls: a TLS 1.3 record layer for the h2 module, on GnuTLS, with
 * bring-your-own I/O. The caller owns the TCP socket: it feeds received
 * ciphertext in and gets plaintext back, hands plaintext in and gets
 * ciphertext to write (a server may instead have sbh2_sconn_send_fd send
 * it on the socket, never waiting). The handshake runs inside those calls. Version,
 * suites and groups come from transports/native/sb_tls.h, shared with h3.
 *
 * ALPN is always "h2" and mandatory: a peer that does not agree fails the
 * handshake. A client verifies the server's chain and host name by default;
 * a server can require and verify a client certificate.
 *
 * Session resumption: a server config with tickets enabled sends TLS 1.3
 * NewSessionTickets sealed with keys GnuTLS derives from a random master key
 * per config; the derived key rotates every ticket lifetime (the previous one
 * still opens tickets), and tickets older than the lifetime are refused. A
 * client passes a saved ticket to sbh2_tls_new and reads new ones with
 * sbh2_tls_ticket.
 *
 * Return values follow sbh2.h: a count (>= 0) or a negative enum sbwire_error (transports/native/sbwire.h);
 * SBWIRE_ERR_TLS carries a one-line reason in sbh2_tls_error.
 */
#ifndef SBH2_TLS_H
#define SBH2_TLS_H

#include "sbh2.h"
#include "sbh2_server.h"

#ifdef __cplusplus
extern "C" {
#endif




typedef struct sbh2_tls_config sbh2_tls_config;
typedef struct sbh2_tls sbh2_tls;

/* Creates a client (is_server = 0) or server configuration. */
sbh2_tls_config *sbh2_tls_config_new(int is_server);
/* Drops the caller's reference; sessions keep the config alive until they are freed. */
void sbh2_tls_config_free(sbh2_tls_config *cfg);
/* Sets the own certificate chain and private key (PEM). */
int sbh2_tls_config_set_cert(sbh2_tls_config *cfg, const uint8_t *cert, uint32_t cert_len, const uint8_t *key,
                             uint32_t key_len);
/* Adds trusted CA certificates (PEM); returns how many were added. */
int sbh2_tls_config_add_ca(sbh2_tls_config *cfg, const uint8_t *pem, uint32_t len);
/* Sets the verification mode (enum sbwire_tls_verify). */
int sbh2_tls_config_set_verify(sbh2_tls_config *cfg, int mode);
/* Server: sends session tickets valid for lifetime_s seconds (0 turns them off, the default). */
int sbh2_tls_config_set_tickets(sbh2_tls_config *cfg, uint32_t lifetime_s);

/* Starts a session; a client verifies server_name and offers the saved ticket if one is given. */
sbh2_tls *sbh2_tls_new(sbh2_tls_config *cfg, const char *server_name, const uint8_t *ticket, uint32_t ticket_len);
/* Frees the session. */
void sbh2_tls_free(sbh2_tls *tls);
/* Feeds received ciphertext and writes the plaintext it yields into out; returns its length (0 for none). */
int sbh2_tls_recv(sbh2_tls *tls, const uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t cap);
/* Encrypts plaintext (may be empty) and writes pending ciphertext into out; returns its length or SBWIRE_ERR_DONE. */
int sbh2_tls_send(sbh2_tls *tls, const uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t cap);
/* Queues close_notify; then drain sbh2_tls_send. */
int sbh2_tls_shutdown(sbh2_tls *tls);
/* Returns the enum sbwire_tls_state bits that hold. */
int sbh2_tls_state(sbh2_tls *tls);
/* Writes one enum sbwire_tls_info text into buf; returns its length. */
int sbh2_tls_info(sbh2_tls *tls, int kind, uint8_t *buf, uint32_t cap);
/* Ciphertext bytes of the handshake: received (sent = 0) or sent (sent = 1). */
int sbh2_tls_handshake_bytes(sbh2_tls *tls, int sent);
/* RFC 5705 / RFC 8446 §7.5 exporter: writes out_len (1 to 65535) bytes for label and context (may be empty); returns out_len,
 * SBWIRE_ERR_INVALID before the handshake completed, SBWIRE_ERR_CLOSED once the session failed or closed. */
int sbh2_tls_export(sbh2_tls *tls, const uint8_t *label, uint32_t label_len, const uint8_t *context,
                    uint32_t context_len, uint8_t *out, uint32_t out_len);
/* Client: writes the latest ticket (resumption data) into buf; returns its length or SBWIRE_ERR_DONE. */
int sbh2_tls_ticket(sbh2_tls *tls, uint8_t *buf, uint32_t cap);
/* Writes why the session failed (one line) into buf; returns its length. */
int sbh2_tls_error(sbh2_tls *tls, uint8_t *buf, uint32_t cap);

/* Decrypts received ciphertext straight into the HTTP/2 session; returns sbh2_conn_recv's result (0 while handshaking, CLOSED after close_notify). */
int sbh2_conn_recv_tls(sbh2_conn *conn, sbh2_tls *tls, const uint8_t *in, uint32_t in_len);
/* Encrypts the HTTP/2 session's pending output (after the handshake) and writes ciphertext into out, or SBWIRE_ERR_DONE. */
int sbh2_conn_send_tls(sbh2_conn *conn, sbh2_tls *tls, uint8_t *out, uint32_t cap);

/* Server: decrypts received ciphertext straight into the server session; returns sbh2_sconn_recv's result. */
int sbh2_sconn_recv_tls(sbh2_sconn *conn, sbh2_tls *tls, const uint8_t *in, uint32_t in_len);
/* Server: encrypts the server session's output into out; CLOSED once it finished and close_notify went out. */
int sbh2_sconn_send_tls(sbh2_sconn *conn, sbh2_tls *tls, uint8_t *out, uint32_t cap);
/* Server: sends the session's output (through tls unless NULL) on the connected socket fd as long as the kernel takes
 * all of it at once (never waits); returns the bytes left at the start of out for the caller to write, DONE when all
 * went out, CLOSED when the session finished (its last bytes sent), or an error of the pull. */
int sbh2_sconn_send_fd(sbh2_sconn *conn, sbh2_tls *tls, int fd, uint8_t *out, uint32_t cap);

/* Module-owned I/O over TLS (sbh2_server.h): every connection the listener accepts from now on runs a TLS session of
   cfg (which must outlive the listener); CONNECTED follows its handshake. Default none (h2c). */
int sbh2_listener_set_tls(sbh2_listener *ls, sbh2_tls_config *cfg);
/* The TLS session of connection conn_id (of a closed one until the poll after the one that delivered its CLOSED),
   NULL when it is gone or has none; valid while the caller holds the loop's lock. */
sbh2_tls *sbh2_listener_tls(sbh2_listener *ls, uint32_t conn_id);


/*
 * Module-owned client I/O (sbh2_client_loop.c, transports/native/sbloop.h): the module opens a client connection's
 * TCP socket itself (non-blocking connect, TCP_NODELAY), and a loop reads it into the session (through TLS when given:
 * the handshake runs on the loop's thread), writes the session's output and wakes the caller when events wait to be
 * polled (sbh2_conn_poll) or the socket's state changed (sbh2_csock_state). While the loop runs, every call on the
 * connection, its TLS session and the socket is made under sbloop_lock, and requests leave through sbloop_flush.
 */
typedef struct sbh2_csock sbh2_csock;

/* Bits of sbh2_csock_state. */
enum sbh2_csock_state {
  /* The TCP connection is up. */
  SBH2_CSOCK_CONNECTED = 1,
  /* Requests can go: h2c connected, or the TLS handshake completed. */
  SBH2_CSOCK_READY = 2,
  /* The server closed the TCP connection. */
  SBH2_CSOCK_ENDED = 4,
  /* Connecting, the socket or TLS failed (sbh2_csock_error says why). */
  SBH2_CSOCK_FAILED = 8,
};

/* Starts connecting to host (a name or an address) and port; a failure shows in the state. NULL when out of memory. */
sbh2_csock *sbh2_csock_open(const char *host, uint16_t port);
/* Closes the socket and frees it (stop its loop first). */
void sbh2_csock_free(sbh2_csock *cs);
/* Returns the enum sbh2_csock_state bits that hold. */
int sbh2_csock_state(sbh2_csock *cs);
/* Writes why the socket failed (one line) into buf; returns its length. */
int sbh2_csock_error(sbh2_csock *cs, uint8_t *buf, uint32_t cap);
/* Returns the socket's local port. */
int sbh2_csock_port(sbh2_csock *cs);
/* A loop that runs conn (through tls unless NULL) on cs, all three outliving it, and calls wake when events wait or
 * the state changed; NULL on failure. Start it with sbloop_start. */
sbloop *sbh2_conn_loop_new(sbh2_conn *conn, sbh2_tls *tls, sbh2_csock *cs, void (*wake)(void));

#ifdef __cplusplus
}
#endif

#endif /* SBH2_TLS_H */
