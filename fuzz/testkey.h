/*
 * A fixed test certificate (EC P-256, CN=localhost, valid until 2126) and its key, for the
 * fuzz targets' TLS sessions only. Never trusted by anything else.
 */
#ifndef SBFUZZ_TESTKEY_H
#define SBFUZZ_TESTKEY_H

static const char FUZZ_CERT[] =
  "-----BEGIN CERTIFICATE-----\n"
  "MIIBmjCCAUGgAwIBAgIUQDLrRo9bsY+o9674sdJvK0QemQgwCgYIKoZIzj0EAwIw\n"
  "FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMTE0MDcxMVoYDzIxMjYxMTA3\n"
  "MTQwNzExWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
  "PQMBBwNCAAR3csXihrwH7pvFu3VB12qD96iR2p3sRGrz3rxZKs5ucKfiULLKOI8K\n"
  "aVLQ7qhlkZ/naraeK5jnEwq/NFJou3Aio28wbTAdBgNVHQ4EFgQUPfFgLvnj+Tki\n"
  "YEzus5kIeuFiWAwwHwYDVR0jBBgwFoAUPfFgLvnj+TkiYEzus5kIeuFiWAwwDwYD\n"
  "VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
  "zj0EAwIDRwAwRAIgN95aP7UpFBqDXcJgQ4N4ZSeU+mU/egjLG+fvysq3ei0CIGrG\n"
  "RXPqydiumei5Esv1jBA3PpOhPkxk3XPqMPc5jWmw\n"
  "-----END CERTIFICATE-----\n"
  ;
static const char FUZZ_KEY[] =
  "-----BEGIN PRIVATE KEY-----\n"
  "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgP75OPQ5qpJ48e30w\n"
  "lLp6kv0P4wL67G+A0VkEPLIWyImhRANCAAR3csXihrwH7pvFu3VB12qD96iR2p3s\n"
  "RGrz3rxZKs5ucKfiULLKOI8KaVLQ7qhlkZ/naraeK5jnEwq/NFJou3Ai\n"
  "-----END PRIVATE KEY-----\n"
  ;

#endif
