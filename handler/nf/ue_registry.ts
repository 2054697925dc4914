/**
 * The subscribers the mock NFs share: what each NF has learnt about a UE
 * (authenticated, registered at the UDM, its PDU sessions), so an NF can
 * refuse a step that comes before the step it depends on. Every table is
 * bounded: past its cap the oldest entry is forgotten.
 */

/** One PDU session as the SMF (and the AMF) know it. */
export interface SmContext {
  /** The resource id in the SMF's `Location`. */
  smContextRef: string;
  supi: string;
  pduSessionId: number;
  dnn: string;
  /**
   * `CREATED` after the SM context create, `N1N2_SENT` once the AMF has taken
   * the N1N2 message, `ACTIVATED` after the N2 setup response, `DEACTIVATED`
   * after an AN release, `ACTIVATING` during a service request, `HO_PREPARING`
   * and `HO_PREPARED` during an N2 handover.
   */
  state:
    | "CREATED"
    | "N1N2_SENT"
    | "ACTIVATED"
    | "DEACTIVATED"
    | "ACTIVATING"
    | "HO_PREPARING"
    | "HO_PREPARED";
}

/** An authentication context at the AUSF (TS 29.509 `UEAuthenticationCtx`). */
export interface AuthContext {
  supi: string;
  servingNetworkName: string;
  rand: string;
  xresStar: string;
  /** Result of the 5G-AKA confirmation, once received. */
  result?: "AUTHENTICATION_SUCCESS" | "AUTHENTICATION_FAILURE";
}

/** What the NFs know about one UE. */
export interface UeState {
  supi: string;
  /** Set by a successful 5G-AKA confirmation at the AUSF. */
  authenticated: boolean;
  /** The AMF registration at the UDM (TS 29.503 `Amf3GppAccessRegistration`), once made. */
  amfRegistration?: Record<string, unknown>;
  /** PDU session id → SM context ref. */
  pduSessions: Map<number, string>;
}

/** Options for {@link createUeRegistry}. */
export interface UeRegistryOptions {
  /** Largest number of entries in each table. Default 100000. */
  maxEntries?: number;
}

/** A `Map` that forgets its oldest entry past `cap`. */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly #cap: number;
  constructor(cap: number) {
    super();
    if (!(Number.isInteger(cap) && cap >= 1)) {
      throw new RangeError(`cap must be a positive integer, got ${cap}`);
    }
    this.#cap = cap;
  }
  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.#cap) {
      this.delete(this.keys().next().value as K);
    }
    return super.set(key, value);
  }
}

/** The shared state of the mock NFs. */
export interface UeRegistry {
  /** UEs by SUPI. */
  readonly ues: BoundedMap<string, UeState>;
  /** AUSF authentication contexts by authCtxId. */
  readonly authContexts: BoundedMap<string, AuthContext>;
  /** SMF SM contexts by smContextRef. */
  readonly smContexts: BoundedMap<string, SmContext>;
  /** Resources that need no more than their existence checked (policies, subscriptions). */
  readonly resources: BoundedMap<string, string>;
  /** The UE with this SUPI, created on first use. */
  ue(supi: string): UeState;
}

/** Creates an empty registry. */
export function createUeRegistry(options: UeRegistryOptions = {}): UeRegistry {
  const cap = options.maxEntries ?? 100_000;
  const ues = new BoundedMap<string, UeState>(cap);
  return {
    ues,
    authContexts: new BoundedMap(cap),
    smContexts: new BoundedMap(cap),
    resources: new BoundedMap(cap),
    ue(supi) {
      let state = ues.get(supi);
      if (state === undefined) {
        state = { supi, authenticated: false, pduSessions: new Map() };
        ues.set(supi, state);
      }
      return state;
    },
  };
}
