/**
 * Captures what real HTTP/2 and HTTP/3 peers put on the wire and writes it as seed inputs of the
 * fuzz targets (fuzz/corpus/TARGET/cap-*; formats in docs/fuzzing.md): nghttp and curl against
 * nghttpd (h2c, and the TLS ClientHellos), gtlsclient against gtlsserver (QUIC). Each exchange
 * runs on loopback under tcpdump; the capture is split by direction (the server's port) and TCP
 * payloads are put back in sequence order.
 *
 * Usage: deno run -A --unstable-net scripts/fuzz_capture.ts  (as root: tcpdump needs it; apt-get install -y tcpdump)
 */
import { writeDevPki } from "../transports/pki.ts";
import { freePort, ROOT, waitForPort } from "../lib/host.ts";
import { startGtlsServer } from "../interop/peers.ts";

const CORPUS = `${ROOT}/fuzz/corpus`;

interface Packet {
  proto: "tcp" | "udp";
  srcPort: number;
  dstPort: number;
  seq: number;
  payload: Uint8Array;
}

/** Reads a pcap file (Ethernet or Linux cooked link type; IPv4 and IPv6; TCP and UDP). */
export function parsePcap(b: Uint8Array): Packet[] {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const magic = v.getUint32(0, true);
  const le = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  if (!le && v.getUint32(0, false) !== 0xa1b2c3d4) throw new SyntaxError("Not a pcap file");
  const link = v.getUint32(20, le);
  const out: Packet[] = [];
  for (let off = 24; off + 16 <= b.length;) {
    const incl = v.getUint32(off + 8, le);
    const frame = b.subarray(off + 16, off + 16 + incl);
    off += 16 + incl;
    const fv = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    let ip = 0, type = 0;
    if (link === 1) [ip, type] = [14, fv.getUint16(12)];
    else if (link === 113) [ip, type] = [16, fv.getUint16(14)];
    else throw new SyntaxError(`Link type ${link} is not handled`);
    let proto = 0, l4 = 0, end = frame.length;
    if (type === 0x0800) {
      proto = frame[ip + 9];
      l4 = ip + (frame[ip] & 15) * 4;
      end = ip + fv.getUint16(ip + 2);
    } else if (type === 0x86dd) {
      proto = frame[ip + 6];
      l4 = ip + 40;
      end = l4 + fv.getUint16(ip + 4);
    } else {
      continue;
    }
    const srcPort = fv.getUint16(l4), dstPort = fv.getUint16(l4 + 2);
    if (proto === 6) {
      const data = l4 + (frame[l4 + 12] >> 4) * 4;
      out.push({
        proto: "tcp",
        srcPort,
        dstPort,
        seq: fv.getUint32(l4 + 4),
        payload: frame.slice(data, end),
      });
    } else if (proto === 17) {
      out.push({ proto: "udp", srcPort, dstPort, seq: 0, payload: frame.slice(l4 + 8, end) });
    }
  }
  return out;
}

/** The TCP byte stream sent to (toServer) or from a server port, in sequence order. */
export function tcpStream(packets: Packet[], port: number, toServer: boolean): Uint8Array {
  const parts: Uint8Array[] = [];
  let next: number | undefined;
  for (const p of packets) {
    if (p.proto !== "tcp" || (toServer ? p.dstPort : p.srcPort) !== port || !p.payload.length) {
      continue;
    }
    next ??= p.seq;
    const skip = (next - p.seq) >>> 0; /* bytes already taken (a retransmission) */
    if (skip >= p.payload.length) continue;
    parts.push(p.payload.subarray(skip));
    next = (p.seq + p.payload.length) >>> 0;
  }
  return concat(parts);
}

/** The UDP datagrams sent to or from a server port, each as a u16 length and its bytes. */
export function udpDatagrams(packets: Packet[], port: number, toServer: boolean): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const p of packets) {
    if (p.proto !== "udp" || (toServer ? p.dstPort : p.srcPort) !== port) continue;
    parts.push(new Uint8Array([p.payload.length & 255, p.payload.length >> 8]), p.payload);
  }
  return concat(parts);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

async function save(target: string, name: string, head: number[], body: Uint8Array): Promise<void> {
  await Deno.mkdir(`${CORPUS}/${target}`, { recursive: true });
  await Deno.writeFile(`${CORPUS}/${target}/cap-${name}`, concat([new Uint8Array(head), body]));
  console.log(`${target}/cap-${name}: ${head.length + body.length} bytes`);
}

/** Runs fn with tcpdump capturing loopback traffic of port; returns the packets. */
async function capture(port: number, fn: () => Promise<void>): Promise<Packet[]> {
  const file = await Deno.makeTempFile({ suffix: ".pcap" });
  const dump = new Deno.Command("tcpdump", {
    args: ["-i", "lo", "-U", "--immediate-mode", "-s", "0", "-w", file, `port ${port}`],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = dump.stderr.getReader();
  /* tcpdump says "listening on lo" once it captures */
  for (let text = ""; !text.includes("listening");) {
    const { value, done } = await reader.read();
    if (done) throw new Error("tcpdump did not start (apt-get install -y tcpdump; run as root)");
    text += new TextDecoder().decode(value);
  }
  try {
    await fn();
  } finally {
    await new Promise((r) =>
      setTimeout(r, 200)
    ); /* tcpdump -U flushes per packet; let the last ones land */
    dump.kill("SIGINT");
    reader.releaseLock();
    await dump.stderr.cancel().catch(() => {});
    await dump.status;
  }
  const packets = parsePcap(await Deno.readFile(file));
  await Deno.remove(file);
  return packets;
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir();
  const pki = await writeDevPki(dir);
  const body = `${dir}/body.json`;
  await Deno.writeTextFile(
    body,
    JSON.stringify({ supi: "imsi-001010000000001", x: "y".repeat(3000) }),
  );
  /* h2c: nghttp and curl against nghttpd */
  {
    const port = freePort();
    const server = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-d", dir, String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const url = `http://127.0.0.1:${port}/body.json`;
      const cases: [string, string, string[]][] = [
        ["nghttp-get", "nghttp", ["-n", url]],
        ["nghttp-post", "nghttp", ["-n", "-d", body, url]],
        ["nghttp-multi", "nghttp", ["-n", "-m", "8", url]],
        ["curl-get", "curl", ["-s", "-o", "/dev/null", "--http2-prior-knowledge", url]],
        ["curl-post", "curl", [
          "-s",
          "-o",
          "/dev/null",
          "--http2-prior-knowledge",
          "--data-binary",
          `@${body}`,
          url,
        ]],
      ];
      for (const [name, cmd, args] of cases) {
        const packets = await capture(port, () => run(cmd, args));
        await save("h2_server", name, [0, 0x11, 0x22], tcpStream(packets, port, true));
        /* the client target: mode 0, one request made first */
        await save("h2_client", name, [0, 0x11, 0x22, 1], tcpStream(packets, port, false));
      }
    } finally {
      server.kill();
      await server.status;
    }
  }
  /* TLS: the ClientHellos of nghttp and curl (ciphertext mode of the server target) */
  {
    const port = freePort();
    const server = new Deno.Command("nghttpd", {
      args: ["-d", dir, String(port), `${dir}/server-key.pem`, `${dir}/server.pem`],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      await waitForPort(port);
      const url = `https://127.0.0.1:${port}/body.json`;
      const cases: [string, string, string[]][] = [
        ["nghttp-tls", "nghttp", ["-n", url]],
        ["curl-tls", "curl", ["-s", "-k", "-o", "/dev/null", "--http2", url]],
      ];
      for (const [name, cmd, args] of cases) {
        const packets = await capture(port, () => run(cmd, args));
        await save("h2_server", name, [1, 0x11, 0x22], tcpStream(packets, port, true));
      }
    } finally {
      server.kill();
      await server.status;
    }
  }
  /* QUIC: gtlsclient against gtlsserver (interop's one starter, serving dir) */
  {
    const server = await startGtlsServer(pki, { extra: ["-d", dir], readyPath: "/body.json" });
    const port = server.port;
    try {
      const url = `https://127.0.0.1:${port}/body.json`;
      const packets = await capture(
        port,
        () =>
          run("timeout", [
            "10",
            "gtlsclient",
            "-q",
            "--exit-on-all-streams-close",
            "127.0.0.1",
            String(port),
            url,
          ]),
      );
      await save("h3_server", "gtlsclient", [0, 0, 0], udpDatagrams(packets, port, true));
      await save("h3_client", "gtlsserver", [0, 0, 0, 1], udpDatagrams(packets, port, false));
    } finally {
      await server.close();
    }
  }
  await Deno.remove(dir, { recursive: true });
}

if (import.meta.main) await main();
