/** Origin parsing shared by every client and the CLI. */

/** Parses an `http://` or `https://` URL (or only the schemes in `schemes`); throws a one-line `TypeError`. */
export function parseOrigin(text: string, schemes: readonly string[] = ["http:", "https:"]): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`Invalid URL: ${text}`);
  }
  if (!schemes.includes(url.protocol)) {
    const allowed = schemes.map((s) => `${s}//`).join(" or ");
    throw new TypeError(`Unsupported scheme ${url.protocol} (use ${allowed})`);
  }
  return url;
}

/** A host name as it stands in a URL: an IPv6 address in brackets. */
export function urlHost(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}
