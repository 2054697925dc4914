/*
 * What the peers scenario's two module hosts (h2host.c, h3host.c) share: the
 * one response head they send, built with sbwire.h's field writer, reading an
 * event record's fixed part with sbwire.h's getters, and reading a PEM file.
 */
#ifndef SBILAB_HOST_COMMON_H
#define SBILAB_HOST_COMMON_H

#include "../../transports/native/sbwire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for host_head's block. */
#define HOST_HEAD_CAP 256

/* Writes the response head every request gets (200, octet-stream, size bytes); returns its length. */
static inline size_t host_head(uint8_t *p, long size) {
  char length[24];
  snprintf(length, sizeof length, "%ld", size);
  const char *fields[][2] = {
      {":status", "200"},
      {"content-type", "application/octet-stream"},
      {"content-length", length},
  };
  size_t n = 0;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    n += sbwire_put_field(p + n, (const uint8_t *)fields[i][0], strlen(fields[i][0]),
                          (const uint8_t *)fields[i][1], strlen(fields[i][1]));
  }
  return n;
}

/* The fixed part of the event record at p: its type, stream and the lengths of what follows. */
static inline void host_event(const uint8_t *p, uint32_t *type, uint32_t *conn_id, int64_t *stream_id,
                              uint32_t *head_len, uint32_t *body_len) {
  *type = sbwire_get_u32(p);
  *conn_id = sbwire_get_u32(p + 4);
  *stream_id = (int64_t)sbwire_get_u64(p + 8);
  *head_len = sbwire_get_u32(p + 24);
  *body_len = sbwire_get_u32(p + 28);
}

/* Reads the whole file at path into a new buffer (the caller frees it); NULL when it cannot. */
static inline uint8_t *host_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  uint8_t *p = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) p = malloc((size_t)n + 1);
  if (p != NULL && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return p;
}

#endif /* SBILAB_HOST_COMMON_H */
