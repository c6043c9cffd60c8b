/**
 * The open-element bookkeeping of htmlparser2's Parser, kept beside its bare
 * Tokenizer (extract.ts): which elements are open, which ones an opening tag
 * closes implicitly, and whether the tokenizer is inside SVG or MathML,
 * where <script>, <style>, <textarea>, <iframe>… are not raw text. Rules
 * and tables as in htmlparser2 12's Parser; a property test checks the two
 * give the same links on random markup.
 */

const VOID = new Set(['area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'img', 'input', 'isindex', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

const formTags = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const pTag = new Set(['p']);
const headingTags = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p']);
const tableSectionTags = new Set(['thead', 'tbody']);
const ddtTags = new Set(['dd', 'dt']);
const rtpTags = new Set(['rt', 'rp']);
/** An opening tag closes the open elements on top that are in its set. */
const IMPLIES_CLOSE = new Map<string, Set<string>>([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['a', new Set(['a'])],
  ['li', new Set(['li'])],
  ['p', pTag],
  ['h1', headingTags],
  ['h2', headingTags],
  ['h3', headingTags],
  ['h4', headingTags],
  ['h5', headingTags],
  ['h6', headingTags],
  ['select', formTags],
  ['input', formTags],
  ['output', formTags],
  ['button', formTags],
  ['datalist', formTags],
  ['textarea', formTags],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', ddtTags],
  ['dt', ddtTags],
  ...['address', 'article', 'aside', 'blockquote', 'details', 'div', 'dl', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header', 'hr', 'main', 'nav', 'ol', 'pre', 'section', 'table', 'ul'].map(
    (t): [string, Set<string>] => [t, pTag],
  ),
  ['rt', rtpTags],
  ['rp', rtpTags],
  ['tbody', tableSectionTags],
  ['tfoot', tableSectionTags],
]);

/** Elements whose content is HTML again inside SVG/MathML (foreignObject only as an SVG element). */
const INTEGRATION = new Set(['mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'desc', 'title']);

type Context = 'html' | 'svg' | 'math';

export class OpenElements {
  /** Outermost first, innermost last (push and pop at the end: a deep page costs no shifting); `ctx` when the element pushed a context. */
  private readonly stack: { name: string; ctx: boolean }[] = [];
  private readonly contexts: Context[] = [];
  /** Forms open (a <form> inside one is ignored). */
  private forms = 0;
  /** The innermost context, kept as it changes: the tokenizer asks for it at every tag. */
  private context: Context = 'html';

  /** Inside SVG or MathML (not in an HTML integration point within them). */
  inForeign(): boolean {
    return this.context !== 'html';
  }

  /** The element's name as the Parser reads it (an <image> outside SVG/MathML is an <img>). */
  private read(name: string): string {
    return name === 'image' && !this.inForeign() ? 'img' : name;
  }

  private get innermost(): string | undefined {
    return this.stack[this.stack.length - 1]?.name;
  }

  /** An opening tag; returns its name as read and the names it closed implicitly, innermost first; null when ignored (a <form> in a form). */
  open(raw: string): { name: string; closed: string[] } | null {
    const name = this.read(raw);
    if (name === 'form' && this.forms > 0) return null;
    const closed: string[] = [];
    const implies = IMPLIES_CLOSE.get(name);
    while (implies && this.stack.length > 0 && implies.has(this.innermost as string)) closed.push(this.pop());
    if (!VOID.has(name)) {
      const ctx: Context | null = name === 'svg' ? 'svg' : name === 'math' ? 'math' : INTEGRATION.has(name) || (name === 'foreignobject' && this.context === 'svg') ? 'html' : null;
      if (ctx) {
        this.contexts.push(ctx);
        this.context = ctx;
      }
      this.stack.push({ name, ctx: ctx !== null });
      if (name === 'form') this.forms++;
    }
    return { name, closed };
  }

  /** A self-closing tag just opened: inside SVG/MathML it ends at once; returns what closed. */
  selfClosed(name: string): string[] {
    return this.inForeign() && this.innermost === name ? [this.pop()] : [];
  }

  /** A closing tag; returns the names it closed, innermost first (none if no such element is open). */
  close(raw: string): string[] {
    const name = this.read(raw);
    if (VOID.has(name)) return [];
    let at = this.stack.length - 1;
    while (at >= 0 && (this.stack[at] as { name: string }).name !== name) at--;
    const closed: string[] = [];
    while (at >= 0 && this.stack.length > at) closed.push(this.pop());
    return closed;
  }

  private pop(): string {
    const e = this.stack.pop() as { name: string; ctx: boolean };
    if (e.ctx) {
      this.contexts.pop();
      this.context = this.contexts[this.contexts.length - 1] ?? 'html';
    }
    if (e.name === 'form') this.forms--;
    return e.name;
  }
}
