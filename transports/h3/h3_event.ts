/**
 * {@linkcode H3Event}: one event polled from an HTTP/3 connection or server,
 * its header block decoded and its body owned by the caller, read one at a
 * time through the native layer's one event poller.
 */
import { type EventHandler, EventPoller, type PollCall } from "../native/event_poller.ts";
import { decodeHeaderBlock, type HeaderList, WIRE_EVENT } from "../native/wire.ts";
import { H3Error } from "./h3_error.ts";
import { nativeErrorName } from "../native/errors.ts";

/** Event types (enum sbwire_event_type, transports/native/sbwire.h). */
export const H3_EVENT = WIRE_EVENT;
/** Bit in a server MESSAGE event's `code`: the request arrived (at least partly) in 0-RTT. */
export const H3_MSG_EARLY = 1;

/** One event polled from a connection or server. */
export interface H3Event {
  /** One of {@linkcode H3_EVENT}. */
  type: number;
  /** Server connection id (0 on the client). */
  connId: number;
  /** Stream id, or -1 for connection events. */
  streamId: number;
  /** Application error code (RESET) or shim error code (CLOSED). */
  code: number;
  /** Header fields including pseudo-headers (MESSAGE). */
  headers: HeaderList;
  /** Body bytes (MESSAGE), owned by the caller. */
  body: Uint8Array;
}

/** The event poller of an HTTP/3 connection or server: a 64 KiB buffer, failures as {@linkcode H3Error}. */
export function h3EventPoller(): EventPoller {
  return new EventPoller({
    bufferBytes: 64 * 1024,
    error: (code) => new H3Error(code, `poll failed: ${nativeErrorName(code)}`),
  });
}

/** Hands over a connection's or server's events one at a time. */
export class H3EventReader {
  #poller: EventPoller;

  /** `poller`: the one to read through (it is used synchronously, so it can be shared); default its own. */
  constructor(poller: EventPoller = h3EventPoller()) {
    this.#poller = poller;
  }

  #ready: H3Event[] = [];
  #take: EventHandler = (type, streamId, code, block, body, owned, connId) => {
    this.#ready.push({
      type,
      connId,
      streamId,
      code,
      headers: block.length ? decodeHeaderBlock(block) : [],
      body: owned ? body : body.slice(),
    });
  };

  /** The next event `poll` (an sbh3_*_poll call) has, or null when there is none. */
  read(poll: PollCall): H3Event | null {
    if (this.#ready.length === 0) this.#poller.poll(poll, this.#take, 1);
    return this.#ready.shift() ?? null;
  }
}
