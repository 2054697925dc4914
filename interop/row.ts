/** One line of the interop matrix, shared by the matrix and its impaired-path cases. */

/** How a case ended. */
export type CaseStatus = "pass" | "fail" | "unsupported";

/** One line of the matrix. */
export interface MatrixRow {
  /** The runner's case name (variants after a colon). */
  name: string;
  status: CaseStatus;
  /** What was seen, or why the case cannot run here. */
  reason: string;
}
