/**
 * A mock AUSF (TS 29.509 `Nausf_UEAuthentication`): 5G-AKA authentication
 * and its confirmation. Vectors are deterministic digests of the SUPI and the
 * context id, and the simulated UE answers with {@link simulatedResStar}.
 */
import { ProblemError } from "../problem.ts";
import {
  contextNotFound,
  hexDigest,
  jsonBody,
  jsonResponse,
  type NfContext,
  type NfRoute,
  stringIe,
  supiOf,
} from "./_shared.ts";

/** Base path of the API. */
export const AUSF_API = "/nausf-auth/v1";

/** The RES* a simulated UE computes for a RAND (the AUSF expects exactly this). */
export function simulatedResStar(rand: string): string {
  return hexDigest(`res*:${rand}`, 16);
}

/** The AUSF's routes. */
export function ausfRoutes(ctx: NfContext): NfRoute[] {
  const base = `${AUSF_API}/ue-authentications`;
  return [{
    path: base,
    methods: {
      // TS 29.509 §5.2.2.2.2: POST AuthenticationInfo → 201 UEAuthenticationCtx.
      POST(request) {
        const info = jsonBody(request, "AuthenticationInfo", ["supiOrSuci", "servingNetworkName"]);
        const supi = supiOf(stringIe(info, "supiOrSuci"));
        if (supi === undefined) {
          throw new ProblemError(403, {
            cause: "USER_NOT_FOUND",
            detail: "supiOrSuci is neither an IMSI SUPI nor a null-scheme SUCI",
            invalidParams: [{ param: "/supiOrSuci", reason: "unknown subscriber" }],
          });
        }
        const servingNetworkName = stringIe(info, "servingNetworkName");
        const authCtxId = ctx.newId();
        const rand = hexDigest(`rand:${supi}:${authCtxId}`, 16);
        const xresStar = simulatedResStar(rand);
        ctx.ues.ue(supi);
        ctx.ues.authContexts.set(authCtxId, { supi, servingNetworkName, rand, xresStar });
        const href = `${ctx.apiRoot}${base}/${authCtxId}`;
        return jsonResponse(201, {
          authType: "5G_AKA",
          "5gAuthData": {
            rand,
            hxresStar: hexDigest(`hxres*:${rand}:${xresStar}`, 16),
            autn: hexDigest(`autn:${rand}`, 16),
          },
          _links: { "5g-aka": { href: `${href}/5g-aka-confirmation` } },
          servingNetworkName,
        }, { location: href });
      },
    },
  }, {
    path: `${base}/{authCtxId}/5g-aka-confirmation`,
    methods: {
      // TS 29.509 §5.2.2.2.2 step 3: PUT ConfirmationData → 200 ConfirmationDataResponse.
      PUT(request, p) {
        const auth = ctx.ues.authContexts.get(p.authCtxId);
        if (auth === undefined) {
          throw contextNotFound("Authentication context", p.authCtxId, request.path);
        }
        const data = jsonBody(request, "ConfirmationData", ["resStar"]);
        // A repeated confirmation (a retry) gets the first answer again.
        auth.result ??= data.resStar === auth.xresStar
          ? "AUTHENTICATION_SUCCESS"
          : "AUTHENTICATION_FAILURE";
        if (auth.result !== "AUTHENTICATION_SUCCESS") {
          return jsonResponse(200, { authResult: auth.result });
        }
        ctx.ues.ue(auth.supi).authenticated = true;
        return jsonResponse(200, {
          authResult: auth.result,
          supi: auth.supi,
          kseaf: hexDigest(`kseaf:${auth.rand}:${auth.servingNetworkName}`, 32),
        });
      },
    },
  }];
}
