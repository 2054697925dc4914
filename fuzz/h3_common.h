/*
 * What the two h3 fuzz targets share: a seeded generator behind sbh3's own random bytes, the
 * test certificate's configurations, an sbh3 client and server that complete a handshake in
 * memory, raw stream writes that bypass HTTP/3 on one side (so the fuzzer's bytes reach the
 * other side's HTTP/3 layer inside real, encrypted QUIC packets), and event checks.
 */
#ifndef SBFUZZ_H3_COMMON_H
#define SBFUZZ_H3_COMMON_H

#include "../transports/h3/native/sbh3_int.h"
#include "fuzz.h"

#define H3_PKT 65536
#define H3_CLIENT_PORT 40000
#define H3_SERVER_PORT 4433

/* Restarts the generator behind sbh3's random bytes. */
void h3f_seed(uint64_t seed);

/* Server configuration flags. */
#define H3F_SMALL 1 /* body limit 3000 bytes, send queues 4000 / 6000 bytes */
#define H3F_RETRY 2 /* validate addresses with Retry */

/* A server configuration (test certificate, H3F_* flags) and a client one that does not verify; made once. */
sbh3_config *h3f_server_config(int flags);
sbh3_config *h3f_client_config(void);

/* An in-memory client and server. */
typedef struct {
  sbh3_server *srv;
  sbh3_conn *cli;
  uint32_t conn_id; /* the server's id of cli's connection (0 until known) */
  uint8_t pkt[H3_PKT];
  uint8_t meta[64];
} h3f_pair;

/* Starts both ends (nothing exchanged yet); 0 or -1. */
int h3f_pair_new(h3f_pair *p, sbh3_config *scfg, sbh3_config *ccfg);
/* Frees both ends. */
void h3f_pair_free(h3f_pair *p);
/* Checks a datagram the server wrote and its destination record. */
void h3f_check_server_datagram(const h3f_pair *p, int n);
/* Moves datagrams both ways until neither side has one (bounded); server datagrams go to check first. */
void h3f_pump(h3f_pair *p);
/* Runs the handshake; 1 when both ends completed it. */
int h3f_handshake(h3f_pair *p);
/* Writes len bytes (fin when asked) on stream sid of conn in QUIC packets handed to deliver; bytes written. */
size_t h3f_write_stream(sbh3_conn *conn, int64_t sid, const uint8_t *data, size_t len, int fin,
                        void (*deliver)(h3f_pair *, const uint8_t *, size_t), h3f_pair *p);
/* Hands one datagram to the server / to the client. */
void h3f_to_server(h3f_pair *p, const uint8_t *d, size_t n);
void h3f_to_client(h3f_pair *p, const uint8_t *d, size_t n);

#endif /* SBFUZZ_H3_COMMON_H */
