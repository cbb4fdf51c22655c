// A small line chart on <canvas>, shipped with the broker so the console works offline.
// series: [{ name, color, points: [[timeMs, value], ...] }]
;(function () {
  'use strict'
  const PALETTE = ['#0b6bcb', '#12805c', '#b54708', '#6941c6', '#c11574', '#0e7090', '#667085']

  function niceMax(v) {
    if (!(v > 0)) return 1
    const p = Math.pow(10, Math.floor(Math.log10(v)))
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p
    return 10 * p
  }

  function line(canvas, series, opts) {
    const format = (opts && opts.format) || String
    const ratio = window.devicePixelRatio || 1
    const w = canvas.clientWidth || 600
    const h = canvas.clientHeight || 200
    canvas.width = w * ratio
    canvas.height = h * ratio
    const g = canvas.getContext('2d')
    g.setTransform(ratio, 0, 0, ratio, 0, 0)
    g.clearRect(0, 0, w, h)
    const left = 64, right = 8, top = 8, bottom = 20
    let t0 = Infinity, t1 = -Infinity, vmax = 0
    for (const s of series) for (const [t, v] of s.points) { t0 = Math.min(t0, t); t1 = Math.max(t1, t); vmax = Math.max(vmax, v) }
    if (!isFinite(t0)) { t0 = Date.now() - 60000; t1 = Date.now() }
    if (t1 === t0) t0 = t1 - 1000
    const ymax = niceMax(vmax)
    const x = (t) => left + ((t - t0) / (t1 - t0)) * (w - left - right)
    const y = (v) => top + (1 - v / ymax) * (h - top - bottom)
    g.strokeStyle = '#eaecf0'; g.fillStyle = '#667085'; g.font = '11px system-ui, sans-serif'; g.lineWidth = 1
    for (let i = 0; i <= 4; i++) {
      const v = (ymax * i) / 4
      g.beginPath(); g.moveTo(left, y(v)); g.lineTo(w - right, y(v)); g.stroke()
      g.textAlign = 'right'; g.fillText(format(v), left - 6, y(v) + 4)
    }
    g.textAlign = 'left'; g.fillText(new Date(t0).toLocaleTimeString(), left, h - 4)
    g.textAlign = 'right'; g.fillText(new Date(t1).toLocaleTimeString(), w - right, h - 4)
    series.forEach((s, i) => {
      g.strokeStyle = s.color || PALETTE[i % PALETTE.length]; g.lineWidth = 2; g.beginPath()
      s.points.forEach(([t, v], j) => (j === 0 ? g.moveTo(x(t), y(v)) : g.lineTo(x(t), y(v))))
      g.stroke()
      // A series with one sample so far is a dot, not nothing.
      if (s.points.length === 1) {
        g.fillStyle = g.strokeStyle
        g.beginPath(); g.arc(x(s.points[0][0]), y(s.points[0][1]), 3, 0, 2 * Math.PI); g.fill()
      }
    })
  }

  window.TidelogCharts = { line, PALETTE }
})()
