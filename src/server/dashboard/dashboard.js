// tessel serve's dashboard (src/server/dashboard.h; docs/daemon.md, "Dashboard").
// Everything comes from the daemon's JSON API with the token the user signs
// in with, kept in this tab's sessionStorage only (never in a URL, a cookie
// or the page). Every value from the API is shown with textContent: job
// names, users, reasons and specs are the users' own text, never HTML.
// Views: #/ (cluster and jobs), #/jobs/ID (one job); both refresh every
// second (a new poll starts once the previous one has been drawn).
'use strict';
(function () {
  var TOKEN_KEY = 'tessel.token';
  var POLL_MS = 1000;
  var HISTORY_EVERY = 5;  // polls between cluster-history reads
  var JOB_STEPS = 500;    // latest steps a job page asks for (GET /v1/jobs/{id}?steps=)
  var PAGE = 1000;        // jobs per GET /v1/jobs page (the API's largest)
  var MAX_PAGES = 20;     // 20,000 jobs at most in the list
  // Kelly's colours of maximum contrast, as report.html uses them
  // (sim/report_html.h ReportPalette).
  var PALETTE = ['#222222', '#f3c300', '#875692', '#f38400', '#a1caf1', '#be0032', '#c2b280', '#848482',
    '#008856', '#e68fac', '#0067a5', '#f99379', '#604e97', '#f6a600', '#b3446c', '#882d17'];
  var STATES = ['pending', 'profiling', 'starting', 'running', 'reconfiguring', 'completed', 'failed', 'cancelled'];
  var TERMINAL = { completed: true, failed: true, cancelled: true };

  var token = null;
  var me = null;
  var timer = null;
  var view = 0;       // bumps on every navigation: a stale poll draws nothing
  var polls = 0;
  var charts = {};
  var jobRows = new Map();  // id -> {tr, cells, key}
  var jobOrder = '';
  var lastJobs = [];
  var firstJobsRender = true;

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function show(id, on) { $(id).hidden = !on; }
  function stateClass(s) { return STATES.indexOf(s) >= 0 ? 'st st-' + s : 'st'; }
  function parseTime(t) { return t ? Date.parse(t) : NaN; }
  function duration(ms) {
    if (!isFinite(ms)) return '';
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + (s % 60) + 's';
    var h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + (m % 60) + 'm';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
  }
  function clock(ms) {
    var d = new Date(ms);
    function two(n) { return (n < 10 ? '0' : '') + n; }
    return two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds());
  }
  // Local time, as the browser's clock shows it.
  function when(t) {
    var ms = parseTime(t);
    if (!isFinite(ms)) return '';
    var d = new Date(ms);
    function two(n) { return (n < 10 ? '0' : '') + n; }
    return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' + clock(ms);
  }

  function ApiError(status, message) { this.status = status; this.message = message; }

  function api(path) {
    return fetch(path, {
      headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' },
      cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer'
    }).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (body) {
        if (!res.ok) {
          var msg = body && typeof body.error === 'string' ? body.error : 'HTTP ' + res.status;
          throw new ApiError(res.status, msg);
        }
        return body;
      });
    }, function (e) { throw new ApiError(0, 'cannot reach the daemon (' + e.message + ')'); });
  }

  // ---- sign-in ----
  function signedOut(message) {
    token = null;
    me = null;
    sessionStorage.removeItem(TOKEN_KEY);
    stopPolling();
    show('overview', false);
    show('job-page', false);
    show('sign-out', false);
    $('whoami').textContent = '';
    $('live').textContent = '';
    show('sign-in', true);
    $('sign-in-error').textContent = message || '';
    $('token').focus();
  }

  function signIn(candidate, fromStorage) {
    token = candidate;
    return api('/v1/me').then(function (who) {
      me = who;
      sessionStorage.setItem(TOKEN_KEY, candidate);
      $('token').value = '';
      $('sign-in-error').textContent = '';
      show('sign-in', false);
      show('sign-out', true);
      $('whoami').textContent = 'signed in as ' + who.user + (who.admin ? ' (admin: all jobs)' : ' (your jobs)');
      route();
    }, function (e) {
      var why = e.status === 401 ? 'Refused by the daemon (HTTP 401): ' + e.message
        : 'Could not sign in' + (e.status ? ' (HTTP ' + e.status + ')' : '') + ': ' + e.message;
      signedOut(fromStorage ? 'Signed out: ' + why : why);
    });
  }

  // ---- polling ----
  function stopPolling() {
    view++;
    if (timer) clearTimeout(timer);
    timer = null;
  }
  function poll(fn) {
    stopPolling();
    var mine = view;
    function tick() {
      fn(mine).then(function () {
        if (mine !== view) return;
        $('live').textContent = 'live \u00b7 ' + clock(Date.now());
        $('live').className = 'live';
      }, function (e) {
        if (mine !== view) return;
        if (e instanceof ApiError && e.status === 401) { signedOut('Signed out: ' + e.message); return; }
        $('live').textContent = 'update failed: ' + (e && e.message ? e.message : String(e));
        $('live').className = 'live stale';
      }).then(function () {
        if (mine === view) timer = setTimeout(tick, POLL_MS);
      });
    }
    tick();
  }

  function route() {
    if (!token) return;
    var m = /^#\/jobs\/(\d+)$/.exec(location.hash);
    destroyCharts();
    if (m) {
      show('overview', false);
      show('job-page', true);
      var id = m[1];
      clearJobPage();
      poll(function (mine) {
        return api('/v1/jobs/' + id + '?steps=' + JOB_STEPS).then(function (job) { if (mine === view) drawJob(job); });
      });
    } else {
      show('job-page', false);
      show('overview', true);
      polls = 0;
      jobRows.clear();
      jobOrder = '';
      clear($('jobs-body'));
      firstJobsRender = true;
      poll(pollOverview);
    }
  }

  function destroyCharts() {
    Object.keys(charts).forEach(function (k) { charts[k].destroy(); });
    charts = {};
  }

  // ---- overview: cluster ----
  function pollOverview(mine) {
    var wantHistory = polls++ % HISTORY_EVERY === 0;
    return Promise.all([
      fetchJobs(),
      api('/v1/nodes'),
      wantHistory ? api('/v1/cluster/history') : Promise.resolve(null)
    ]).then(function (r) {
      if (mine !== view) return;
      drawNodes(r[1]);
      if (r[2]) drawHistory(r[2]);
      lastJobs = r[0].jobs;
      drawJobs(r[0]);
    });
  }

  function drawNodes(nodes) {
    var byType = {};
    nodes.forEach(function (n) {
      var t = byType[n.gpu_type] || (byType[n.gpu_type] = { gpus: 0, used: 0, nodes: 0, drained: 0, down: 0 });
      t.gpus += n.gpus;
      t.used += n.gpus_used;
      t.nodes += 1;
      if (/drain/.test(n.state)) t.drained += 1;
      if (/down/.test(n.state)) t.down += 1;
    });
    var box = $('cluster-summary');
    clear(box);
    Object.keys(byType).sort().forEach(function (type) {
      var t = byType[type];
      var card = el('div', null, 'type');
      card.appendChild(el('div', type, 'type-name'));
      var bar = el('div', null, 'bar');
      var fill = el('div', null, 'bar-used');
      fill.style.width = (t.gpus ? 100 * t.used / t.gpus : 0) + '%';
      bar.appendChild(fill);
      card.appendChild(bar);
      card.appendChild(el('div', t.used + ' of ' + t.gpus + ' GPUs used, ' + Math.max(0, t.gpus - t.used) + ' free'));
      var health = t.nodes + ' node' + (t.nodes === 1 ? '' : 's');
      if (t.drained) health += ', ' + t.drained + ' drained';
      if (t.down) health += ', ' + t.down + ' down';
      card.appendChild(el('div', health, t.drained || t.down ? 'warn' : 'muted'));
      box.appendChild(card);
    });
    var body = $('nodes').tBodies[0];
    clear(body);
    nodes.slice().sort(function (a, b) {
      return a.gpu_type < b.gpu_type ? -1 : a.gpu_type > b.gpu_type ? 1 : a.name < b.name ? -1 : 1;
    }).forEach(function (n) {
      var tr = el('tr');
      tr.appendChild(el('td', n.name));
      tr.appendChild(el('td', n.gpu_type));
      tr.appendChild(el('td', n.gpus_used + ' / ' + n.gpus, 'num'));
      tr.appendChild(el('td', n.gpus_free, 'num'));
      tr.appendChild(el('td', n.state, /drain|down|fail/.test(n.state) ? 'bad' : ''));
      body.appendChild(tr);
    });
  }

  function timeAxis(title) {
    return {
      type: 'linear', title: { display: true, text: title },
      ticks: { maxTicksLimit: 8, callback: function (v) { return clock(v); } }
    };
  }

  function drawHistory(h) {
    var datasets = h.gpu_types.map(function (t, i) {
      return {
        label: t.name + ' (' + t.gpus + ' GPUs)', stepped: true, pointRadius: 2, borderWidth: 2,
        borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length],
        data: h.samples.map(function (s) { return { x: Date.parse(s.time), y: s.allocated[i] }; })
      };
    });
    var first = h.samples.length ? Date.parse(h.samples[0].time) : NaN;
    $('history-note').textContent = h.samples.length
      ? 'Since ' + clock(first) + ': one sample every ' + h.interval_s + ' s (the daemon keeps the last hours), the last one now.'
      : 'No samples yet.';
    if (typeof Chart === 'undefined') return;
    if (charts.history) {
      charts.history.data.datasets = datasets;
      charts.history.update('none');
      return;
    }
    charts.history = new Chart($('history-chart'), {
      type: 'line', data: { datasets: datasets },
      options: {
        animation: false, maintainAspectRatio: false, parsing: false, normalized: true,
        scales: { x: timeAxis('time'), y: { beginAtZero: true, title: { display: true, text: 'GPUs allocated' },
          ticks: { precision: 0 } } },
        plugins: { tooltip: { callbacks: { title: function (items) { return items.length ? clock(items[0].parsed.x) : ''; } } } }
      }
    });
  }

  // ---- overview: jobs ----
  function fetchJobs() {
    var f = $('filter-state').value;
    // Finished jobs only when the filter may show them.
    var all = f === '' || TERMINAL[f] === true;
    var jobs = [];
    function page(after, n) {
      return api('/v1/jobs?' + (all ? 'all=true&' : '') + 'limit=' + PAGE + '&after=' + after).then(function (p) {
        jobs = jobs.concat(p);
        if (p.length === PAGE && n + 1 < MAX_PAGES) return page(p[p.length - 1].id, n + 1);
        return { jobs: jobs, truncated: p.length === PAGE };
      });
    }
    return page(0, 0);
  }

  function waiting(j, now) {
    var sub = parseTime(j.submitted);
    if (j.started) return parseTime(j.started) - sub;
    if (j.finished) return parseTime(j.finished) - sub;
    return now - sub;
  }

  // The deadline's risk from time alone (the table has no progress): met or
  // missed once known; for a job still going, the share of its window left.
  function deadlineRisk(j, now) {
    if (!j.deadline) return ['', ''];
    var d = parseTime(j.deadline);
    if (j.state === 'completed') return parseTime(j.finished) <= d ? ['met', 'ok'] : ['missed', 'bad'];
    if (TERMINAL[j.state]) return ['not met', 'bad'];  // failed or cancelled
    if (now > d) return ['missed', 'bad'];
    var left = (d - now) / Math.max(1, d - parseTime(j.submitted));
    if (left < 0.1) return ['high', 'bad'];
    if (left < 0.33) return ['medium', 'warn'];
    return ['low', 'ok'];
  }

  var JOB_COLUMNS = 11;
  function jobCells(j, now) {
    var risk = deadlineRisk(j, now);
    var d = parseTime(j.deadline);
    return [
      [String(j.id), 'num'],
      [j.name, 'name'],
      [j.user, ''],
      [j.state, stateClass(j.state)],
      [j.gpu_type ? j.gpus + ' \u00d7 ' + j.gpu_type : '\u2014', ''],
      [j.plan || '\u2014', 'plan'],
      [String(j.restarts), 'num'],
      [duration(waiting(j, now)), 'num'],
      [j.deadline ? when(j.deadline) + (TERMINAL[j.state] ? '' : ' (in ' + duration(d - now) + ')') : '', ''],
      [risk[0], risk[1]],
      [j.reason, 'reason']
    ];
  }

  // Rows are clones of one template (cheaper than 13 createElement calls).
  var rowTemplate = null;
  function makeRow(j) {
    if (!rowTemplate) {
      rowTemplate = el('div', null, 'grid-row');
      for (var k = 0; k < JOB_COLUMNS; k++) {
        var span = el('span');
        if (k < 2) span.appendChild(el('a'));
        rowTemplate.appendChild(span);
      }
    }
    var tr = rowTemplate.cloneNode(true);
    var cells = [];
    for (var i = 0; i < JOB_COLUMNS; i++) {
      var td = tr.children[i];
      if (i < 2) {
        td.firstChild.href = '#/jobs/' + j.id;
        cells.push(td.firstChild);
      } else {
        cells.push(td);
      }
    }
    return { tr: tr, cells: cells, key: null };
  }

  function drawJobs(result) {
    var t0 = performance.now();
    var now = Date.now();
    var f = $('filter-state').value;
    var user = $('filter-user').value;
    var users = {};
    var shown = result.jobs.filter(function (j) {
      users[j.user] = true;
      if (user && j.user !== user) return false;
      if (f === 'active') return !TERMINAL[j.state];
      return !f || j.state === f;
    }).reverse();  // newest first
    updateUsers(Object.keys(users).sort());
    var body = $('jobs-body');
    var seen = new Set();
    shown.forEach(function (j) {
      var row = jobRows.get(j.id);
      if (!row) { row = makeRow(j); jobRows.set(j.id, row); }
      seen.add(j.id);
      // Only the cells whose text or class changed are touched (each second
      // that is the waiting time of every pending job).
      var cells = jobCells(j, now);
      if (!row.key) row.key = [];
      for (var i = 0; i < cells.length; i++) {
        var old = row.key[i];
        if (old && old[0] === cells[i][0] && old[1] === cells[i][1]) continue;
        row.cells[i].textContent = cells[i][0];
        if (i === 1 || i === 10) row.cells[i].title = cells[i][0];  // cut with an ellipsis when long
        var td = i < 2 ? row.cells[i].parentNode : row.cells[i];
        if (!old || old[1] !== cells[i][1]) td.className = cells[i][1];
        row.key[i] = cells[i];
      }
    });
    jobRows.forEach(function (row, id) {
      if (!seen.has(id)) { if (row.tr.parentNode) row.tr.parentNode.removeChild(row.tr); jobRows.delete(id); }
    });
    var tA = performance.now();
    var order = shown.map(function (j) { return j.id; }).join(',');
    if (order !== jobOrder) {
      var frag = document.createDocumentFragment();
      shown.forEach(function (j) { frag.appendChild(jobRows.get(j.id).tr); });
      body.appendChild(frag);
      jobOrder = order;
    }
    $('jobs-count').textContent = shown.length + ' of ' + result.jobs.length + ' job' +
      (result.jobs.length === 1 ? '' : 's') + (me && me.admin ? ' (everyone\u2019s)' : ' (yours)');
    $('jobs-more').textContent = result.truncated ? 'Showing the first ' + result.jobs.length +
      ' jobs; use tessel jobs --all for the rest.' : '';
    var table = $('jobs');
    var tB = performance.now();
    if (firstJobsRender) void table.offsetHeight;
    // For the browser test: rows filled, placed, laid out (ms).
    table.dataset.prof = [(tA - t0).toFixed(1), (tB - tA).toFixed(1), (performance.now() - tB).toFixed(1)].join(' ');  // the first time, include style and layout
    var ms = performance.now() - t0;
    table.dataset.rows = String(shown.length);
    table.dataset.renders = String((+table.dataset.renders || 0) + 1);
    table.dataset.renderMs = ms.toFixed(1);
    if (firstJobsRender) {
      firstJobsRender = false;
      performance.mark('tessel-jobs-rendered');
      table.dataset.firstRenderAt = performance.now().toFixed(1);
      table.dataset.firstBuildMs = ms.toFixed(1);
    }
  }

  function updateUsers(users) {
    var sel = $('filter-user');
    var have = Array.prototype.slice.call(sel.options, 1).map(function (o) { return o.value; });
    if (have.join('\u0001') === users.join('\u0001')) return;
    var current = sel.value;
    while (sel.options.length > 1) sel.remove(1);
    users.forEach(function (u) { var o = el('option', u); o.value = u; sel.appendChild(o); });
    if (users.indexOf(current) >= 0) sel.value = current;
  }

  function refilter() {
    jobRows.forEach(function (row) { row.key = null; });
    if (location.hash.indexOf('#/jobs/') !== 0) route();
  }

  // ---- one job ----
  function clearJobPage() {
    ['job-title', 'job-facts', 'timeline', 'timeline-legend', 'steps-note', 'loss-note', 'plan-now', 'plan-changes',
      'job-spec']
      .forEach(function (id) { clear($(id)); });
    ['history', 'corrections', 'profiles'].forEach(function (id) { clear($(id).tBodies[0]); });
  }

  function fact(dl, name, value, cls) {
    dl.appendChild(el('dt', name));
    dl.appendChild(el('dd', value === undefined || value === null || value === '' ? '\u2014' : value, cls));
  }

  function median(xs) {
    if (!xs.length) return NaN;
    var s = xs.slice().sort(function (a, b) { return a - b; });
    return s[Math.floor(s.length / 2)];
  }

  function fillTable(id, rows) {
    var body = $(id).tBodies[0];
    clear(body);
    rows.forEach(function (cells) {
      var tr = el('tr');
      cells.forEach(function (c) {
        if (Array.isArray(c)) tr.appendChild(el('td', c[0], c[1])); else tr.appendChild(el('td', c));
      });
      body.appendChild(tr);
    });
  }

  function drawJob(j) {
    var now = Date.now();
    $('job-title').textContent = 'Job ' + j.id + ': ' + j.name;
    document.title = 'tessel \u00b7 job ' + j.id;
    var train = j.steps.filter(function (s) { return !s.profile; });
    var profiles = j.steps.filter(function (s) { return s.profile; });
    var last = train.length ? train[train.length - 1] : null;
    var dl = $('job-facts');
    clear(dl);
    fact(dl, 'state', j.state, stateClass(j.state));
    fact(dl, 'user', j.user);
    fact(dl, 'GPUs', j.gpu_type ? j.gpus + ' \u00d7 ' + j.gpu_type : '');
    fact(dl, 'nodes', j.nodes.join(', '));
    fact(dl, 'plan', j.plan);
    fact(dl, 'progress', last ? 'step ' + last.step + (j.iterations ? ' of ' + j.iterations : '') : (j.iterations ? '0 of ' + j.iterations : ''));
    fact(dl, 'restarts', j.restarts + ' (failures ' + j.failures + ', launches ' + j.launches + ')');
    fact(dl, 'submitted', when(j.submitted));
    fact(dl, 'started', when(j.started));
    fact(dl, 'finished', when(j.finished));
    fact(dl, 'waiting', duration(waiting(j, now)));
    if (j.deadline) {
      fact(dl, 'deadline', when(j.deadline));
      // With measured steps: the remaining steps at the recent median step
      // time, against the deadline.
      var risk = deadlineRisk(j, now);
      var recent = train.slice(-10).map(function (s) { return s.step_time_s; });
      if (!TERMINAL[j.state] && last && j.iterations && recent.length) {
        var eta = now + Math.max(0, j.iterations - last.step) * median(recent) * 1000;
        var late = eta > parseTime(j.deadline);
        risk = [(late ? 'at risk: ' : 'on track: ') + 'projected end ' + when(new Date(eta).toISOString()) +
          ' at ' + median(recent).toFixed(3) + ' s/step', late ? 'bad' : 'ok'];
      }
      fact(dl, 'deadline risk', risk[0], risk[1]);
    }
    fact(dl, 'Slurm job', j.slurm_job_id);
    fact(dl, 'reason', j.reason);
    drawTimeline(j, now);
    fillTable('history', j.history.map(function (t) {
      return [when(t.time), t.from ? [t.from, stateClass(t.from)] : '(submitted)', [t.to, stateClass(t.to)], [t.reason, 'reason']];
    }));
    drawPlans(j);
    fillTable('corrections', j.corrections.map(function (c) {
      return [c.gpu_type, c.scope || '(the type\u2019s)', [c.factor.toFixed(3), 'num'], [String(c.samples), 'num']];
    }));
    if (!j.corrections.length) fillTable('corrections', [['none yet', '', '', '']]);
    fillTable('profiles', profiles.map(function (s) {
      return [when(s.time), s.gpu_type, [String(s.gpus), 'num'], [String(s.step), 'num'], [s.step_time_s.toFixed(4), 'num']];
    }));
    if (!profiles.length) fillTable('profiles', [['none', '', '', '', '']]);
    $('job-spec').textContent = j.spec_yaml;
    drawSteps(train);
    drawLoss(train);
  }

  function drawTimeline(j, now) {
    var box = $('timeline');
    clear(box);
    var h = j.history;
    if (!h.length) return;
    var start = parseTime(h[0].time);
    var end = j.finished ? Math.max(parseTime(j.finished), parseTime(h[h.length - 1].time)) : now;
    var span = Math.max(1, end - start);
    var seen = {};
    h.forEach(function (t, i) {
      var from = parseTime(t.time);
      var to = i + 1 < h.length ? parseTime(h[i + 1].time) : end;
      var seg = el('div', null, 'seg ' + stateClass(t.to));
      seg.style.width = Math.max(0.4, 100 * (to - from) / span) + '%';
      seg.title = t.to + ' ' + clock(from) + ' \u2013 ' + clock(to) + ' (' + duration(to - from) + '): ' + t.reason;
      if ((to - from) / span > 0.12) seg.textContent = t.to;
      box.appendChild(seg);
      seen[t.to] = true;
    });
    var legend = $('timeline-legend');
    clear(legend);
    legend.appendChild(el('span', clock(start) + ' \u2192 ' + (j.finished ? clock(end) : 'now') + ' (' + duration(span) + ')', 'muted'));
    STATES.forEach(function (s) {
      if (!seen[s]) return;
      var item = el('span', null, 'legend-item');
      item.appendChild(el('span', '', 'swatch ' + stateClass(s)));
      item.appendChild(document.createTextNode(s));
      legend.appendChild(item);
    });
  }

  // Each launch's plan is in its transition to `starting` ("launching on
  // ALLOC plan PLAN"); the reasons of `reconfiguring` say why it changed.
  function drawPlans(j) {
    var list = $('plan-changes');
    clear(list);
    var previous = null;
    j.history.forEach(function (t) {
      if (t.to === 'reconfiguring') {
        list.appendChild(el('li', clock(parseTime(t.time)) + ' reconfigure: ' + t.reason, 'reason'));
        return;
      }
      if (t.to !== 'starting') return;
      var at = t.reason.lastIndexOf(' plan ');
      var plan = at >= 0 ? t.reason.slice(at + 6) : t.reason;
      var li = el('li', null, 'reason');
      li.appendChild(el('span', clock(parseTime(t.time)) + (previous === null ? ' first plan: ' :
        plan === previous ? ' relaunched, same plan: ' : ' plan changed to: ')));
      li.appendChild(el('code', plan));
      li.appendChild(el('div', t.reason, 'muted'));
      list.appendChild(li);
      previous = plan;
    });
    if (!list.firstChild) list.appendChild(el('li', 'none yet', 'muted'));
    $('plan-now').textContent = j.plan ? j.plan
      : previous !== null ? 'none now (' + j.state + '); the last launch ran ' + previous : 'none (not placed yet)';
  }

  // One series per allocation (GPU type x count), so a move shows: each
  // step's `field` against its step number, labelled "`what` on 2 x a100".
  function perAllocation(steps, field, what, colourOffset) {
    var groups = [];
    var index = {};
    steps.forEach(function (s) {
      var k = s.gpus + ' \u00d7 ' + s.gpu_type;
      if (!(k in index)) { index[k] = groups.length; groups.push({ label: k, data: [] }); }
      groups[index[k]].data.push({ x: s.step, y: s[field] });
    });
    return groups.map(function (g, i) {
      var c = PALETTE[(i + colourOffset) % PALETTE.length];
      return { label: what + ' on ' + g.label, data: g.data, borderColor: c, backgroundColor: c, pointRadius: 2,
        borderWidth: 1.5, showLine: true };
    });
  }

  // A scatter chart over step numbers in charts[key], drawn on `canvas` once
  // and updated in place after.
  function drawStepChart(key, canvas, datasets, yAxis) {
    if (typeof Chart === 'undefined') return;
    if (charts[key]) {
      charts[key].data.datasets = datasets;
      charts[key].update('none');
      return;
    }
    charts[key] = new Chart($(canvas), {
      type: 'scatter', data: { datasets: datasets },
      options: {
        animation: false, maintainAspectRatio: false, parsing: false,
        scales: { x: { type: 'linear', title: { display: true, text: 'step' }, ticks: { precision: 0 } }, y: yAxis }
      }
    });
  }

  function drawSteps(steps) {
    $('steps-note').textContent = steps.length
      ? steps.length + ' of the latest steps the job reported (up to ' + JOB_STEPS + ' with profiling steps). ' +
        'Median ' + median(steps.map(function (s) { return s.step_time_s; })).toFixed(3) + ' s.'
      : 'No steps reported yet (the job appends them to TESSEL_METRICS_FILE).';
    drawStepChart('steps', 'steps-chart', perAllocation(steps, 'step_time_s', 'step time', 10),
      { beginAtZero: true, title: { display: true, text: 'step time (s)' } });
  }

  // The loss each step reported (the mean over its global batch); steps
  // without one are left out.
  function drawLoss(steps) {
    var withLoss = steps.filter(function (s) { return s.loss !== null && s.loss !== undefined; });
    var last = withLoss.length ? withLoss[withLoss.length - 1] : null;
    $('loss-note').textContent = last
      ? withLoss.length + ' steps with a loss; at step ' + last.step + ': ' + last.loss.toPrecision(5) +
        (withLoss.length > 1 ? ' (first shown: ' + withLoss[0].loss.toPrecision(5) + ' at step ' + withLoss[0].step + ')' : '') + '.'
      : steps.length ? 'The job reports no loss (a "loss" field in its step lines; examples/README.md).'
        : 'No steps reported yet.';
    drawStepChart('loss', 'loss-chart', perAllocation(withLoss, 'loss', 'loss', 3),
      { title: { display: true, text: 'loss' } });
  }

  // ---- start ----
  function start() {
    $('sign-in-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var t = $('token').value.trim();
      if (!t) { $('sign-in-error').textContent = 'Enter a token.'; return; }
      $('sign-in-error').textContent = 'Checking\u2026';
      signIn(t, false);
    });
    $('sign-out').addEventListener('click', function () { signedOut('Signed out.'); });
    $('filter-state').addEventListener('change', refilter);
    $('filter-user').addEventListener('change', function () {
      jobRows.forEach(function (row) { row.key = null; });
      drawJobs({ jobs: lastJobs, truncated: false });
    });
    window.addEventListener('hashchange', route);
    var saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) signIn(saved, true); else signedOut('');
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
