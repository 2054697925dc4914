/** What each ratio of the peers scenario compares; its label adds the shape (`, 1 stream`). */
export const PEER_RATIOS = {
  h2Server: "our h2c server ÷ nghttpd, req/s under h2load",
  h2Host: "our h2c module in a C host ÷ nghttpd, req/s under h2load",
  h2Client: "our SBI client ÷ h2load, time per request from nghttpd",
  h2Engine: "our native engine ÷ h2load, req/s from nghttpd",
  h3Server: "our h3 server ÷ gtlsserver, req/s under the native h3 engine",
  h3Host: "our h3 module in a C host ÷ gtlsserver, req/s under the native h3 engine",
  h3Client: "our SBI h3 client ÷ the native h3 engine, time per request from gtlsserver",
} as const;
