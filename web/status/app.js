// weir's live status page: polls /api/view every 2 s and draws the arena's
// totals, its pages per second, a page of the domain table (each visible
// domain's requests per second plotted against its limit and, with adaptivePace, its learned pace, with uPlot) and
// the dead letter's first page. Text from Redis (domain names, URLs,
// reasons) only ever goes into textContent.
'use strict';

(() => {
  const REFRESH_MS = 2000;
  const $ = (sel) => document.querySelector(sel);
  const state = { q: '', sort: 'domain', dir: 'asc', page: 0, size: 25 };
  /** domain → uPlot of its row; exposed for tests and curious operators. */
  const charts = new Map();
  const exposed = { charts, arenaChart: null, view: null, refreshes: 0, firstRenderMs: null };
  window.weirStatus = exposed;

  const fmt = new Intl.NumberFormat('en', { maximumFractionDigits: 2 });
  const num = (v) => (v === null || v === undefined ? '—' : typeof v === 'number' ? fmt.format(v) : String(v));
  const rate = (r) => (r === 'unlimited' ? 'unlimited' : `${fmt.format(r)}/s`);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };

  function drawTotals(v) {
    const t = v.totals;
    const cards = [
      ['queued', t.queued], ['leased', t.leased], ['waiting to retry', t.delayed], ['done', t.done], ['pages', t.pages],
      ['errors', t.errors], ['dead', t.dead], ['robots-blocked', t.robotsBlocked], ['domains', t.domains], ['workers seen', v.workers],
    ];
    // A crawl that revisits (seed revisit): what its revisits found; its delayed URLs are mostly revisits waiting.
    const rv = t.revisits;
    if (rv && rv.done + rv.capDrops > 0) {
      cards[2] = ['waiting: revisits, retries', t.delayed];
      cards.push(['revisits', rv.done], ['changed', rv.changed], ['unchanged', rv.unchanged], ['not modified (304)', rv.notModified], ['gone', rv.gone]);
    }
    if (v.bloom) {
      cards.push(['Bloom fill', `${(v.bloom.fill * 100).toFixed(3)}%`], ['est. false positives', v.bloom.combinedFalsePositiveRate < 1e-12 ? '< 1e-12' : v.bloom.combinedFalsePositiveRate.toExponential(1)]);
    }
    const box = $('#totals');
    box.replaceChildren(...cards.map(([label, value]) => {
      const c = el('div', undefined, 'card');
      c.append(el('b', num(value)), el('span', label));
      c.dataset.total = label;
      return c;
    }));
  }

  /** The buckets worth drawing: those that end after the crawl started (all 5 minutes once it has run that long). */
  function shown(v) {
    const h = v.history;
    const skip = v.startedAt === null ? 0 : Math.max(0, Math.min(h.pages.length - 1, Math.floor((v.startedAt - h.from) / h.bucketMs)));
    return { skip, xs: h.pages.slice(skip).map((_, i) => (h.from + (skip + i + 1) * h.bucketMs) / 1000) };
  }

  function drawArenaChart(v) {
    const { skip, xs } = shown(v);
    const data = [xs, v.history.pages.slice(skip)];
    if (exposed.arenaChart) return exposed.arenaChart.setData(data);
    const box = $('#arena-chart');
    exposed.arenaChart = new uPlot({
      width: Math.max(400, box.clientWidth - 10), height: 170, legend: { show: false },
      // At least a minute wide, so a young crawl's axis reads in seconds, not milliseconds.
      scales: { x: { time: true, range: (_u, min, max) => [Math.min(min, max - 60), max] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] } },
      series: [{}, { label: 'pages/s', stroke: '#2a6f97', width: 2, fill: 'rgba(42,111,151,0.12)' }],
    }, data, box);
  }

  function paceChart(row, v, cell) {
    const { skip, xs } = shown(v);
    const ys = (v.history.domains[row.domain] ?? []).slice(skip);
    const limit = row.rateLimit === 'unlimited' ? null : row.rateLimit;
    // The pace adaptivePace learned, bucket by bucket, held until the next report (none: no line).
    let held = null;
    const paces = (v.history.paces?.[row.domain] ?? []).slice(skip).map((p) => (held = p === null ? held : p === 0 ? null : p));
    const data = [xs, ys, ys.map(() => limit), ys.map((_, i) => paces[i] ?? null)];
    let chart = charts.get(row.domain);
    if (chart && chart.root.isConnected && chart.root.parentElement === cell) {
      chart.setData(data);
      return chart;
    }
    chart?.destroy();
    chart = new uPlot({
      width: 190, height: 42, legend: { show: false }, cursor: { show: false },
      axes: [{ show: false }, { show: false }],
      // Room above both the line and the limit, whatever later data brings.
      scales: { x: { time: true }, y: { range: (u) => [0, 1.2 * Math.max(0.1, ...u.data[1], ...[...u.data[2], ...u.data[3]].map((l) => l ?? 0))] } },
      series: [{}, { label: 'requests/s', stroke: '#2a9d8f', width: 1.5 }, { label: 'limit', stroke: '#c0392b', width: 1, dash: [4, 3] }, { label: 'learned pace', stroke: '#e67e22', width: 1 }],
    }, data, cell);
    charts.set(row.domain, chart);
    return chart;
  }

  /** Rows are rebuilt only when the set of visible domains changes; otherwise their cells are updated in place. */
  function drawDomains(v) {
    const body = $('#domains tbody');
    const same = body.children.length === v.rows.length && v.rows.every((r, i) => body.children[i].dataset.domain === r.domain);
    if (!same) {
      for (const c of charts.values()) c.destroy();
      charts.clear();
      body.replaceChildren(...v.rows.map((r) => {
        const tr = el('tr');
        tr.dataset.domain = r.domain;
        for (let i = 0; i < 12; i++) tr.append(el('td'));
        tr.lastChild.className = 'pace';
        return tr;
      }));
    }
    v.rows.forEach((r, i) => {
      const cells = body.children[i].children;
      const values = [r.domain, num(r.queued), num(r.leased), num(r.done), num(r.pages), num(r.failed), num(r.dead), num(r.robotsBlocked), rate(r.rateLimit), `${fmt.format(r.achievedRate)}/s`, r.waitingFor];
      values.forEach((text, j) => { if (cells[j].textContent !== text) cells[j].textContent = text; });
      cells[10].className = `wait${r.waitingFor === 'nothing' ? ' idle' : ''}`;
      if (r.crawlDelay !== null) cells[8].title = `Crawl-delay ${r.crawlDelay} s`;
      paceChart(r, v, cells[11]);
    });
    const first = v.matched === 0 ? 0 : v.query.page * v.query.size + 1;
    $('#page-info').textContent = `${first}–${Math.min(v.matched, (v.query.page + 1) * v.query.size)} of ${v.matched}`;
    $('#matched').textContent = v.shownNote ? `(${v.shownNote})` : `(${v.totals.domains})`;
    $('#prev').disabled = v.query.page === 0;
    $('#next').disabled = (v.query.page + 1) * v.query.size >= v.matched;
    for (const th of document.querySelectorAll('th[data-sort]')) {
      th.classList.toggle('sorted', th.dataset.sort === state.sort);
      th.classList.toggle('asc', state.dir === 'asc');
    }
  }

  function drawDead(v) {
    $('#dead-count').textContent = `(${v.totals.dead})`;
    $('#dead tbody').replaceChildren(...v.dead.map((d) => {
      const tr = el('tr');
      const url = el('td', d.url, 'url');
      url.title = d.url;
      tr.append(el('td', d.domain), url, el('td', d.reason), el('td', num(d.attempts)), el('td', new Date(d.at).toLocaleTimeString()));
      return tr;
    }));
  }

  function drawFaults(v) {
    const faults = v.faults ?? [];
    $('#faults').hidden = faults.length === 0;
    $('#faults tbody').replaceChildren(...faults.map((f) => {
      const tr = el('tr');
      tr.append(el('td', f.worker), el('td', new Date(f.at).toLocaleString()), el('td', f.code), el('td', f.message));
      return tr;
    }));
  }

  let timer = null;
  let asked = 0;
  async function refresh() {
    clearTimeout(timer);
    const ask = ++asked;
    const params = new URLSearchParams({ q: state.q, sort: state.sort, dir: state.dir, page: String(state.page), size: String(state.size) });
    try {
      const res = await fetch(`/api/view?${params}`, { cache: 'no-store' });
      const v = await res.json();
      if (!res.ok) throw new Error(v.error ?? `HTTP ${res.status}`);
      if (ask !== asked) return; // a newer question is on its way
      exposed.view = v;
      $('#arena').textContent = `arena ${v.arena}`;
      $('#redis').textContent = v.redis;
      $('#state').textContent = !v.exists ? 'no such arena yet' : v.drained ? 'drained' : 'running';
      $('#updated').textContent = new Date(v.now).toLocaleTimeString();
      $('#problem').textContent = '';
      drawTotals(v);
      drawArenaChart(v);
      drawDomains(v);
      drawDead(v);
      drawFaults(v);
      exposed.refreshes++;
      // Ms from navigation to the first complete draw (the 10,000-domain test reads it).
      exposed.firstRenderMs ??= performance.now();
    } catch (err) {
      $('#problem').textContent = `cannot refresh: ${err.message}`;
    } finally {
      if (ask === asked) timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  let typing = null;
  $('#search').addEventListener('input', (e) => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.q = e.target.value.trim().toLowerCase(); state.page = 0; void refresh(); }, 200);
  });
  $('#prev').addEventListener('click', () => { state.page = Math.max(0, state.page - 1); void refresh(); });
  $('#next').addEventListener('click', () => { state.page++; void refresh(); });
  for (const th of document.querySelectorAll('th[data-sort]')) {
    th.addEventListener('click', () => {
      const key = th.dataset.sort;
      state.dir = state.sort === key ? (state.dir === 'asc' ? 'desc' : 'asc') : key === 'domain' || key === 'waitingFor' ? 'asc' : 'desc';
      state.sort = key;
      state.page = 0;
      void refresh();
    });
  }
  void refresh();
})();
