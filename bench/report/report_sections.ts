/**
 * Sections a higher layer adds to the reports of a run (the study adds its
 * verdict): each renders from the run record alone, so the terminal,
 * Markdown, CSV and HTML reporters can show it without knowing what it is.
 */
import type { BenchRun, ResultRow } from "../record/schema.ts";

/** What a section shows for one run. */
export interface SectionContent {
  /** The one sentence that leads the section. */
  summary: string;
  /** Lines of explanation after the summary. */
  notes: string[];
  /** A table of the section's findings. */
  table: { header: string[]; body: string[][] };
  /** Tables to show before `table` (e.g. a grid), each with a line below it. */
  grids?: { header: string[]; body: string[][]; caption?: string }[];
  /** The section's own HTML for the summary's place in HTML reports (the table still follows). */
  html?: string;
}

/** One extra section of a run's reports. */
export interface ReportSection {
  /** Anchor id in HTML (e.g. `verdict`). */
  id: string;
  /** Heading (e.g. `Verdict`). */
  title: string;
  /** Open the HTML report with this section (the answer lines and warnings, folded, follow). */
  lead?: boolean;
  /** The section's content for `run`; undefined when it does not apply. */
  render(run: BenchRun): SectionContent | undefined;
  /** CSV columns the section adds to every row. Default none. */
  csvColumns?: readonly string[];
  /**
   * The values of `csvColumns` for the rows of `run`: called once per run, so
   * what every row needs (a study's verdict) is worked out once.
   */
  csvCells?(run: BenchRun): (row: ResultRow) => unknown[];
}

/** Options of every renderer. */
export interface RenderOptions {
  /** Sections to add after the stack lines. Default none. */
  sections?: readonly ReportSection[];
}

/** The heading every report of `run` opens with. */
export function reportTitle(run: BenchRun): string {
  return run.study
    ? "sbilab study: SBI call flows across links"
    : `sbilab benchmark: ${run.config.scenario}`;
}

/** The added sections that apply to `run`, each with its content, in the order given. */
export function pluginSections(
  run: BenchRun,
  options: RenderOptions,
): { section: ReportSection; content: SectionContent }[] {
  const out: { section: ReportSection; content: SectionContent }[] = [];
  for (const section of options.sections ?? []) {
    const content = section.render(run);
    if (content) out.push({ section, content });
  }
  return out;
}
