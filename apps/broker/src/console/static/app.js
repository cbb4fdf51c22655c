// The tidelog console: hash-routed views over the broker's read-only JSON API.
// Plain DOM, no framework; every value is inserted as text, never as HTML.
;(function () {
  'use strict'
  const view = document.getElementById('view')
  const statusEl = document.getElementById('status')
  const charts = window.TidelogCharts
  let timers = []
  let generation = 0

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue
      if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn)
      else if (k === 'class') e.className = v
      // Through the CSSOM: the page's CSP forbids style attributes, not script-set styles.
      else if (k === 'style') e.style.cssText = v
      else e.setAttribute(k, v === true ? '' : String(v))
    }
    for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) e.append(c instanceof Node ? c : String(c))
    return e
  }

  async function api(path) {
    const res = await fetch(path, { headers: { accept: 'application/json' } })
    const body = await res.json()
    if (!res.ok) throw new Error(`${body.error}: ${body.message}`)
    return body
  }

  const num = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'))
  function bytes(n) {
    if (!(n > 0)) return '0 B'
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
    const i = Math.min(u.length - 1, Math.floor(Math.log(n) / Math.log(1024)))
    return `${(n / Math.pow(1024, i)).toFixed(i === 0 ? 0 : 1)} ${u[i]}`
  }
  function duration(ms) {
    const s = Math.floor(ms / 1000)
    return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
  }
  const enc = encodeURIComponent

  function every(ms, fn) {
    const gen = generation
    const tick = async () => {
      if (gen !== generation) return
      try {
        await fn()
      } catch (err) {
        showError(err)
      }
      if (gen === generation) timers.push(setTimeout(tick, ms))
    }
    tick()
  }

  function showError(err) {
    let box = document.getElementById('error')
    if (!box) view.prepend((box = el('p', { id: 'error', class: 'error', 'data-testid': 'error' })))
    box.textContent = String(err && err.message ? err.message : err)
  }

  function table(testid, headers, rows) {
    return el(
      'table',
      { 'data-testid': testid },
      el('thead', {}, el('tr', {}, headers.map((h) => el('th', { class: h.num ? 'num' : '' }, h.label || h)))),
      el('tbody', {}, rows),
    )
  }

  function chartBox(testid, title) {
    const canvas = el('canvas', { 'data-testid': testid })
    const legend = el('div', { class: 'legend' })
    const box = el('div', { class: 'chart' }, el('div', { class: 'muted' }, title), canvas, legend)
    box.draw = (series, format) => {
      charts.line(canvas, series, { format })
      legend.replaceChildren(...series.map((s, i) => el('span', {}, el('i', { style: `background:${s.color || charts.PALETTE[i % charts.PALETTE.length]}` }), s.name)))
    }
    return box
  }

  const THROUGHPUT = { messagesIn: ['messages in /s', num], bytesIn: ['bytes in /s', bytes], bytesOut: ['bytes out /s', bytes] }

  function throughputChart(testid, only) {
    let metric = 'messagesIn'
    const box = chartBox(testid, '')
    const pick = el(
      'select',
      { 'data-testid': `${testid}-metric`, on: { change: () => { metric = pick.value; refresh() } } },
      Object.entries(THROUGHPUT).map(([k, [label]]) => el('option', { value: k }, label)),
    )
    box.prepend(el('div', { class: 'toolbar' }, only ? `Throughput of ${only}` : 'Throughput per topic', pick))
    let samples = []
    function refresh() {
      const names = new Set()
      for (const s of samples) for (const t of Object.keys(s.topics)) if (!only || t === only) names.add(t)
      const series = [...names].sort().map((name) => ({ name, points: samples.map((s) => [s.t, s.topics[name] ? s.topics[name][metric] : 0]) }))
      box.draw(series, THROUGHPUT[metric][1])
    }
    box.update = async () => {
      samples = (await api('/api/throughput')).slice(-120)
      refresh()
    }
    return box
  }

  // --- views --------------------------------------------------------------------------------

  async function overview() {
    const cards = el('div', { class: 'cards', 'data-testid': 'health' })
    const chart = throughputChart('throughput-chart')
    view.replaceChildren(el('h1', {}, 'Broker'), cards, el('h2', {}, 'Throughput'), chart)
    every(2000, async () => {
      const h = await api('/api/health')
      const card = (key, label, value) => el('div', { class: 'card', 'data-testid': `health-${key}` }, el('div', { class: 'label' }, label), el('div', { class: 'value' }, value))
      cards.replaceChildren(
        card('status', 'Status', h.status),
        card('node', 'Node id', h.nodeId),
        card('cluster', 'Cluster id', el('span', { class: 'mono' }, h.clusterId)),
        card('topics', 'Topics', num(h.topics)),
        card('partitions', 'Partitions', num(h.partitions)),
        card('offline', 'Offline partitions', num(h.offlinePartitions)),
        card('log-bytes', 'Log size', bytes(h.logBytes)),
        card('groups', 'Consumer groups', num(h.groups)),
        card('messages-in', 'Messages in', num(h.totals.messagesIn)),
        card('bytes-in', 'Bytes in', bytes(h.totals.bytesIn)),
        card('bytes-out', 'Bytes out', bytes(h.totals.bytesOut)),
        card('event-loop', 'Event loop p99', `${(h.eventLoopDelay.p99 * 1000).toFixed(1)} ms`),
        card('memory', 'Resident memory', bytes(h.memory.rss)),
        card('uptime', 'Uptime', duration(h.uptimeMs)),
      )
      await chart.update()
    })
  }

  async function topics() {
    const body = el('div')
    view.replaceChildren(el('h1', {}, 'Topics'), body)
    every(3000, async () => {
      const list = await api('/api/topics')
      body.replaceChildren(
        table(
          'topics-table',
          ['Topic', { label: 'Partitions', num: true }, { label: 'Messages', num: true }, { label: 'Size', num: true }, 'Topic id'],
          list.map((t) =>
            el(
              'tr',
              { 'data-topic': t.name },
              el('td', {}, el('a', { href: `#/topics/${enc(t.name)}` }, t.name), t.internal ? el('span', { class: 'muted' }, ' (internal)') : null),
              el('td', { class: 'num', 'data-col': 'partitions' }, num(t.partitions)),
              el('td', { class: 'num', 'data-col': 'messages' }, num(t.messages)),
              el('td', { class: 'num', 'data-col': 'size' }, bytes(t.size)),
              el('td', { class: 'mono muted' }, t.topicId),
            ),
          ),
        ),
      )
    })
  }

  async function topic(name) {
    const parts = el('div')
    const configs = el('div')
    const chart = throughputChart('topic-throughput-chart', name)
    let overridesOnly = false
    const toggle = el('label', {}, el('input', { type: 'checkbox', 'data-testid': 'overrides-only', on: { change: (e) => { overridesOnly = e.target.checked; draw() } } }), ' overrides only')
    let last
    function draw() {
      if (!last) return
      parts.replaceChildren(
        table(
          'partitions-table',
          ['Partition', { label: 'Start offset', num: true }, { label: 'End offset', num: true }, { label: 'High watermark', num: true }, { label: 'Last stable', num: true }, { label: 'Size', num: true }, { label: 'Segments', num: true }, ''],
          last.partitions.map((p) =>
            el(
              'tr',
              { 'data-partition': p.partition },
              el('td', {}, p.partition, p.offline ? el('span', { class: 'error' }, ' offline') : null),
              el('td', { class: 'num', 'data-col': 'start' }, num(p.logStartOffset)),
              el('td', { class: 'num', 'data-col': 'end' }, num(p.logEndOffset)),
              el('td', { class: 'num', 'data-col': 'hw' }, num(p.highWatermark)),
              el('td', { class: 'num', 'data-col': 'lso' }, num(p.lastStableOffset)),
              el('td', { class: 'num', 'data-col': 'size' }, bytes(p.size)),
              el('td', { class: 'num' }, num(p.segments)),
              el('td', {}, el('a', { href: `#/topics/${enc(name)}/${p.partition}` }, 'messages')),
            ),
          ),
        ),
      )
      // null: the principal lacks DESCRIBE_CONFIGS on the topic, and the broker withheld them.
      if (last.configs === null) return void configs.replaceChildren(el('p', { class: 'muted', 'data-testid': 'configs-withheld' }, 'Not authorized to describe this topic\'s configs (DESCRIBE_CONFIGS).'))
      configs.replaceChildren(
        table(
          'configs-table',
          ['Config', 'Value'],
          last.configs.filter((c) => !overridesOnly || c.override).map((c) =>
            el('tr', { 'data-config': c.name, class: c.override ? 'override' : '' }, el('td', {}, c.name), el('td', { class: 'mono' }, c.value === null ? 'null' : c.value)),
          ),
        ),
      )
    }
    view.replaceChildren(
      el('h1', {}, `Topic ${name}`),
      el('div', { class: 'muted', 'data-testid': 'topic-id' }),
      el('h2', {}, 'Partitions'),
      parts,
      el('h2', {}, 'Throughput'),
      chart,
      el('h2', {}, 'Configs ', toggle),
      configs,
    )
    every(2000, async () => {
      last = await api(`/api/topics/${enc(name)}`)
      view.querySelector('[data-testid=topic-id]').textContent = `topic id ${last.topicId}`
      draw()
      await chart.update()
    })
  }

  function showBytes(b, mode) {
    if (b === null) return el('span', { class: 'muted' }, 'null')
    const more = b.truncated ? el('span', { class: 'muted' }, ` … (${num(b.size)} bytes)`) : null
    if (b.text === undefined || mode === 'base64') {
      const text = b.base64 !== undefined ? b.base64 : btoa(String.fromCharCode(...new TextEncoder().encode(b.text)))
      return el('span', { class: 'b64', title: 'base64' }, text, more)
    }
    if ((mode === 'auto' || mode === 'json') && b.json) return el('span', { class: 'json' }, JSON.stringify(JSON.parse(b.text), null, mode === 'json' ? 2 : 0), more)
    return el('span', {}, b.text, more)
  }

  async function messages(name, partition) {
    const info = await api(`/api/topics/${enc(name)}`)
    let mode = 'auto'
    let tailing = false
    let next = 0
    let rows = []
    const pick = el('select', { 'data-testid': 'partition', on: { change: () => (location.hash = `#/topics/${enc(name)}/${pick.value}`) } }, info.partitions.map((p) => el('option', { value: p.partition, selected: p.partition === partition }, `partition ${p.partition}`)))
    const offsetIn = el('input', { type: 'number', min: 0, placeholder: 'offset', 'data-testid': 'offset' })
    const timeIn = el('input', { type: 'datetime-local', step: 1, 'data-testid': 'timestamp' })
    const limitIn = el('input', { type: 'number', min: 1, max: 500, value: 50, 'data-testid': 'limit', style: 'width:70px' })
    const isolation = el('select', { 'data-testid': 'isolation', title: "as a consumer's isolation.level", on: { change: () => load(`offset=${rows.length > 0 ? rows[0].offset : 0}`).catch(showError) } }, ['read_uncommitted', 'read_committed'].map((m) => el('option', { value: m }, m)))
    const decode = el('select', { 'data-testid': 'decode', on: { change: () => { mode = decode.value; draw() } } }, ['auto', 'utf8', 'json', 'base64'].map((m) => el('option', { value: m }, m)))
    const tailBtn = el('button', { 'data-testid': 'tail', on: { click: () => { tailing = !tailing; tailBtn.classList.toggle('on', tailing); tailBtn.textContent = tailing ? 'Stop tail' : 'Live tail'; if (tailing) tail() } } }, 'Live tail')
    const summary = el('div', { class: 'muted', 'data-testid': 'messages-summary' })
    const body = el('div')
    function draw() {
      body.replaceChildren(
        table(
          'messages-table',
          [{ label: 'Offset', num: true }, 'Timestamp', 'Key', 'Value', 'Headers'],
          rows.map((r) =>
            el(
              'tr',
              { 'data-offset': r.offset },
              el('td', { class: 'num', 'data-col': 'offset' }, r.offset),
              el('td', { class: 'mono', 'data-col': 'timestamp' }, new Date(r.timestamp).toISOString()),
              el('td', { class: 'mono', 'data-col': 'key' }, showBytes(r.key, mode)),
              el('td', { class: 'mono', 'data-col': 'value' }, showBytes(r.value, mode)),
              el('td', { class: 'mono', 'data-col': 'headers' }, r.headers.map((h) => el('div', {}, `${h.key}: `, showBytes(h.value, mode)))),
            ),
          ),
        ),
      )
    }
    async function load(query) {
      const res = await api(`/api/topics/${enc(name)}/partitions/${partition}/messages?${query}&limit=${enc(limitIn.value || '50')}&isolation=${isolation.value}`)
      rows = res.records
      next = res.nextOffset
      summary.textContent = `offsets ${res.logStartOffset} to ${res.highWatermark - 1} (high watermark ${res.highWatermark}, last stable ${res.lastStableOffset}); showing ${rows.length} ${res.isolation}`
      draw()
    }
    async function tail() {
      const gen = generation
      while (tailing && gen === generation) {
        try {
          const res = await api(`/api/topics/${enc(name)}/partitions/${partition}/messages?offset=${next}&limit=500&isolation=${isolation.value}`)
          if (res.records.length > 0) {
            rows = rows.concat(res.records).slice(-500)
            draw()
          }
          next = res.nextOffset
          summary.textContent = `live: high watermark ${res.highWatermark}; showing ${rows.length}`
        } catch (err) {
          showError(err)
        }
        await new Promise((r) => timers.push(setTimeout(r, 1000)))
      }
    }
    const go = el('button', { 'data-testid': 'go', on: { click: () => (timeIn.value ? load(`timestamp=${new Date(timeIn.value).getTime()}`) : load(`offset=${enc(offsetIn.value || '0')}`)).catch(showError) } }, 'Go')
    view.replaceChildren(
      el('h1', {}, el('a', { href: `#/topics/${enc(name)}` }, name), ` / partition ${partition}`),
      el('div', { class: 'toolbar' }, pick, offsetIn, 'or from', timeIn, 'limit', limitIn, go, el('button', { 'data-testid': 'latest', on: { click: () => load(`last=${enc(limitIn.value || '50')}`).catch(showError) } }, 'Latest'), tailBtn, isolation, 'decode', decode),
      summary,
      body,
    )
    await load('offset=0')
  }

  async function groups() {
    const body = el('div')
    view.replaceChildren(el('h1', {}, 'Consumer groups'), body)
    every(2000, async () => {
      const list = await api('/api/groups')
      body.replaceChildren(
        list.length === 0
          ? el('p', { class: 'muted' }, 'No groups yet.')
          : table(
              'groups-table',
              ['Group', 'State', 'Protocol type', { label: 'Members', num: true }, { label: 'Total lag', num: true }],
              list.map((g) =>
                el(
                  'tr',
                  { 'data-group': g.groupId },
                  el('td', {}, el('a', { href: `#/groups/${enc(g.groupId)}` }, g.groupId)),
                  el('td', { 'data-col': 'state' }, g.state),
                  el('td', {}, g.protocolType),
                  el('td', { class: 'num', 'data-col': 'members' }, g.members),
                  el('td', { class: 'num', 'data-col': 'lag' }, num(g.totalLag)),
                ),
              ),
            ),
      )
    })
  }

  async function group(id) {
    const head = el('div', { class: 'muted', 'data-testid': 'group-state' })
    const members = el('div')
    const lag = el('div')
    const chart = chartBox('lag-chart', 'Lag per partition (live)')
    const history = new Map()
    view.replaceChildren(el('h1', {}, `Group ${id}`), head, el('h2', {}, 'Members'), members, el('h2', {}, 'Lag'), chart, lag)
    every(1500, async () => {
      const g = await api(`/api/groups/${enc(id)}`)
      head.textContent = `state ${g.state}, protocol ${g.protocolType || '–'}/${g.protocol || '–'}, total lag ${num(g.totalLag)}`
      members.replaceChildren(
        table(
          'members-table',
          ['Member', 'Client id', 'Host', 'Assignment'],
          g.members.map((m) =>
            el(
              'tr',
              { 'data-member': m.memberId },
              el('td', { class: 'mono' }, m.memberId, m.groupInstanceId ? ` (${m.groupInstanceId})` : ''),
              el('td', {}, m.clientId),
              el('td', {}, m.clientHost),
              el('td', { class: 'mono', 'data-col': 'assignment' }, m.assignment === null ? 'not a consumer assignment' : m.assignment.map((a) => `${a.topic}: ${a.partitions.join(',')}`).join('; ')),
            ),
          ),
        ),
      )
      lag.replaceChildren(
        table(
          'lag-table',
          ['Topic', { label: 'Partition', num: true }, { label: 'Committed', num: true }, { label: 'High watermark', num: true }, { label: 'Lag', num: true }, 'Member'],
          g.lag.map((p) =>
            el(
              'tr',
              { 'data-topic': p.topic, 'data-partition': p.partition },
              el('td', {}, p.topic),
              el('td', { class: 'num' }, p.partition),
              el('td', { class: 'num', 'data-col': 'committed' }, num(p.committed)),
              el('td', { class: 'num', 'data-col': 'hw' }, num(p.highWatermark)),
              el('td', { class: 'num', 'data-col': 'lag' }, num(p.lag)),
              el('td', { class: 'mono muted' }, p.memberId || '–'),
            ),
          ),
        ),
      )
      const now = Date.now()
      for (const p of g.lag) {
        const key = `${p.topic}-${p.partition}`
        if (!history.has(key)) history.set(key, [])
        const pts = history.get(key)
        pts.push([now, p.lag || 0])
        if (pts.length > 200) pts.shift()
      }
      chart.draw([...history].map(([name, points]) => ({ name, points })), num)
    })
  }

  // --- routing ------------------------------------------------------------------------------

  const ROUTES = [
    [/^#?\/?$/, 'overview', () => overview()],
    [/^#\/topics$/, 'topics', () => topics()],
    [/^#\/topics\/([^/]+)$/, 'topics', (m) => topic(decodeURIComponent(m[1]))],
    [/^#\/topics\/([^/]+)\/(\d+)$/, 'topics', (m) => messages(decodeURIComponent(m[1]), Number(m[2]))],
    [/^#\/groups$/, 'groups', () => groups()],
    [/^#\/groups\/([^/]+)$/, 'groups', (m) => group(decodeURIComponent(m[1]))],
  ]

  function route() {
    generation++
    for (const t of timers) clearTimeout(t)
    timers = []
    const hash = location.hash || '#/'
    for (const [re, nav, show] of ROUTES) {
      const m = re.exec(hash)
      if (m === null) continue
      for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === nav)
      view.replaceChildren()
      show(m).catch(showError)
      return
    }
    view.replaceChildren(el('p', { class: 'error' }, `no such page: ${hash}`))
  }

  async function pollStatus() {
    try {
      const h = await api('/api/health')
      statusEl.textContent = h.principal ? `${h.status} · ${h.principal}` : h.status
      statusEl.className = `status ${h.status}`
    } catch {
      statusEl.textContent = 'offline'
      statusEl.className = 'status offline'
    }
    setTimeout(pollStatus, 5000)
  }

  window.addEventListener('hashchange', route)
  route()
  pollStatus()
})()
