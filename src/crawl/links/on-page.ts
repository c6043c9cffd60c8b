import type { CheerioAPI } from 'cheerio';

/** What a user's onPage hook is given for each HTML page fetched. */
export interface PageContext {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** cheerio, loaded on first use. */
  $: () => Promise<CheerioAPI>;
}

/** Extra URLs to enqueue (absolute or relative to the page), or nothing. */
export type OnPage = (page: PageContext) => Promise<string[] | void> | string[] | void;
