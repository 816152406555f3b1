// report.html's own script (embedded in tessel at build time; see
// src/sim/report_html.h). Reads the runs' figures from the page's JSON block
// and draws the summary table and the charts with Chart.js (3 or 4). Every
// string from the data reaches the page through textContent or a canvas,
// never as HTML.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var runs = data.runs;

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function colour(i) { return data.palette[i % data.palette.length]; }
  function dash(i) { return i < data.palette.length ? [] : [6, 4]; }
  function swatch(i) {
    var s = el('span', undefined, 'swatch');
    s.style.backgroundColor = colour(i);
    return s;
  }

  function header() {
    var what = runs.length === 1 ? 'policy ' + runs[0].policy : runs.length + ' policies';
    var title = 'tessel ' + data.command + ': ' + what + ' on ' + data.cluster;
    document.title = title;
    document.getElementById('title').textContent = title;
    var types = data.gpu_types.map(function (t) { return t.gpus + ' ' + t.name; }).join(', ');
    document.getElementById('setup').textContent =
        'cluster ' + data.cluster + ' (' + data.total_gpus + ' GPUs: ' + types + '), trace ' + data.trace +
        ', truth ' + data.truth + ', placement ' + data.placement + ', seed ' + data.seed;
    document.getElementById('cdf-points').textContent = data.cdf_points;
    document.getElementById('buckets').textContent = data.timeline_buckets;
  }

  function summaryTable() {
    var table = document.getElementById('summary');
    var head = table.createTHead().insertRow();
    head.appendChild(el('th', 'policy'));
    runs.forEach(function (r, i) {
      var th = el('th');
      th.scope = 'col';
      th.appendChild(swatch(i));
      th.appendChild(document.createTextNode(r.policy));
      head.appendChild(th);
    });
    var body = table.createTBody();
    data.table.forEach(function (row) {
      var tr = body.insertRow();
      var th = el('th', row.metric);
      th.scope = 'row';
      tr.appendChild(th);
      row.values.forEach(function (v) { tr.appendChild(el('td', v)); });
    });
  }

  // A figure with a caption, a canvas and an optional note; returns the canvas.
  function figure(title, note) {
    var f = el('figure', undefined, 'chart');
    f.appendChild(el('figcaption', title));
    var box = el('div', undefined, 'canvas-box');
    var canvas = document.createElement('canvas');
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', title);
    box.appendChild(canvas);
    f.appendChild(box);
    if (note) f.appendChild(el('p', note, 'note'));
    document.getElementById('charts').appendChild(f);
    return canvas;
  }

  function common(scales) {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: {legend: {position: 'bottom', labels: {boxWidth: 14, boxHeight: 10}}},
      scales: scales
    };
  }
  function axis(type, title, extra) {
    var a = {type: type, title: {display: true, text: title}};
    for (var k in extra) a[k] = extra[k];
    return a;
  }

  // One line per run from run[key] ({x: [...], y: [...]}), y multiplied by `scale`.
  function lineChart(title, note, key, opt) {
    var datasets = runs.map(function (r, i) {
      var s = r[key], pts = [];
      for (var k = 0; k < s.x.length; ++k) {
        if (opt.logX && !(s.x[k] > 0)) continue;
        pts.push({x: s.x[k], y: s.y[k] * (opt.scale || 1)});
      }
      return {label: r.policy, data: pts, borderColor: colour(i), backgroundColor: colour(i), borderDash: dash(i),
              borderWidth: 2, pointRadius: 0, pointHitRadius: 4, stepped: !!opt.stepped, fill: false};
    });
    var x;
    if (opt.logX) {
      // Labels at powers of ten only, written plainly (0.01, 1, 100).
      x = axis('logarithmic', opt.xTitle, {ticks: {callback: function (v) {
        var e = Math.log10(v);
        return Math.abs(e - Math.round(e)) < 1e-9 ? String(Number(v.toPrecision(1))) : '';
      }}});
    } else {
      // The axis ends where the runs end, not at the next round number.
      var end = 0;
      runs.forEach(function (r) { var xs = r[key].x; if (xs.length) end = Math.max(end, xs[xs.length - 1]); });
      x = axis('linear', opt.xTitle, end > 0 ? {min: 0, max: end} : {});
    }
    var options = common({
      x: x,
      y: axis('linear', opt.yTitle, opt.yMax ? {min: 0, max: opt.yMax} : {beginAtZero: true})
    });
    options.parsing = false;
    options.interaction = {mode: 'nearest', axis: 'x', intersect: false};
    new Chart(figure(title, note), {type: 'line', data: {datasets: datasets}, options: options});
  }

  // Grouped bars: one category per label, one bar per run.
  function barChart(title, note, labels, valuesOf, yTitle, yMax) {
    var datasets = runs.map(function (r, i) {
      return {label: r.policy, data: valuesOf(r), backgroundColor: colour(i), borderColor: colour(i), borderWidth: 1};
    });
    var y = axis('linear', yTitle, yMax ? {min: 0, max: yMax} : {beginAtZero: true});
    new Chart(figure(title, note), {type: 'bar', data: {labels: labels, datasets: datasets},
                                    options: common({x: {type: 'category'}, y: y})});
  }

  function charts() {
    var pct = 100 / Math.max(1, data.total_gpus);
    lineChart('JCT CDF', 'Finished jobs.', 'jct_cdf',
              {logX: true, xTitle: 'JCT (hours, log scale)', yTitle: 'fraction of finished jobs', yMax: 1});
    lineChart('GPUs allocated', 'Held by jobs, running or reconfiguring.', 'allocated_gpus',
              {stepped: true, scale: pct, xTitle: 'time (hours)', yTitle: '% of the cluster\u2019s GPUs', yMax: 100});
    lineChart('GPUs making progress', 'Held by jobs that are running (not restarting).', 'progressing_gpus',
              {stepped: true, scale: pct, xTitle: 'time (hours)', yTitle: '% of the cluster\u2019s GPUs', yMax: 100});
    lineChart('Queue length', 'Jobs submitted and waiting for GPUs.', 'pending_jobs',
              {stepped: true, xTitle: 'time (hours)', yTitle: 'pending jobs'});
    barChart('Allocation by GPU type', 'GPU-time allocated on each type over its GPU-time in the makespan.',
             data.gpu_types.map(function (t) { return t.name + ' (' + t.gpus + ')'; }),
             function (r) { return r.type_allocation_pct; }, '% of the type\u2019s GPU-time', 100);
    barChart('JCT and queueing', 'Finished jobs.', ['average JCT', 'median JCT', 'p99 JCT', 'average queueing'],
             function (r) { return r.jct_h; }, 'hours');
    barChart('Restarts', 'Over all jobs: restarts, preemptions, and restarts caused by node failures.',
             ['restarts', 'preemptions', 'failures'], function (r) { return r.restarts; }, 'count');
    if (data.deadlines) {
      barChart('Deadlines met', 'Jobs finished by their deadline; unfinished and rejected ones count as missed.',
               ['met'], function (r) { return [r.deadline_met_pct]; }, '% of jobs with a deadline', 100);
      barChart('Tardiness', 'Mean lateness of the deadline jobs that finished (0 when on time).',
               ['mean tardiness'], function (r) { return [r.tardiness_h]; }, 'hours');
    }
  }

  header();
  summaryTable();
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = '#1f2328';
  charts();
})();
