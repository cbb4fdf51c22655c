import type { Command } from '../context.js'
import { UsageError } from '../errors.js'

interface Tree {
  globals: string[]
  top: string[]
  subs: Map<string, string[]>
  options: Map<string, string[]>
  topicTaking: string[]
}

function tree(commands: readonly Command[], globals: readonly string[]): Tree {
  const top: string[] = []
  const subs = new Map<string, string[]>()
  const options = new Map<string, string[]>()
  const topicTaking: string[] = []
  for (const c of commands) {
    const [a, b] = c.name.split(' ') as [string, string | undefined]
    if (!top.includes(a)) top.push(a)
    if (b !== undefined) subs.set(a, [...(subs.get(a) ?? []), b])
    options.set(c.name, c.options.map((o) => `--${o.name}`))
    if (c.usage.includes('TOPIC')) topicTaking.push(c.name)
  }
  return { globals: [...globals], top, subs, options, topicTaking }
}

const q = (s: string) => `'${s}'`

// Topic names come from the cluster the command line points at (its -b / --profile), quietly.
function bash(t: Tree): string {
  return `# tidelog completion for bash: eval "$(tidelog completion bash)" in ~/.bashrc
_tidelog() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" w1="\${COMP_WORDS[1]}" w2="\${COMP_WORDS[2]}" subs="" key opts="" conn=() i
  local globals="${t.globals.join(' ')}"
  if [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W "${t.top.join(' ')} --help --version" -- "$cur")); return; fi
  case "$w1" in
${[...t.subs].map(([a, s]) => `    ${a}) subs="${s.join(' ')}" ;;`).join('\n')}
  esac
  if [[ -n "$subs" && $COMP_CWORD -eq 2 ]]; then COMPREPLY=($(compgen -W "$subs" -- "$cur")); return; fi
  key="$w1"; [[ -n "$subs" ]] && key="$w1 $w2"
  case "$key" in
${[...t.options].map(([k, o]) => `    ${q(k)}) opts="${o.join(' ')}" ;;`).join('\n')}
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$opts $globals" -- "$cur")); return; fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -b|--bootstrap-server|-P|--profile) conn+=("\${COMP_WORDS[i]}" "\${COMP_WORDS[i+1]}") ;; esac
  done
  case "$key" in
    ${t.topicTaking.map(q).join('|')}) COMPREPLY=($(compgen -W "$(tidelog topics list -q --timeout 3000 "\${conn[@]}" 2>/dev/null)" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac
}
complete -o default -F _tidelog tidelog
`
}

function zsh(t: Tree): string {
  return `#compdef tidelog
# tidelog completion for zsh: save as _tidelog in a directory of $fpath, or eval "$(tidelog completion zsh)"
_tidelog() {
  local w1=\${words[2]} w2=\${words[3]} key
  local -a subs opts conn globals
  globals=(${t.globals.join(' ')})
  if (( CURRENT == 2 )); then compadd -- ${t.top.join(' ')} --help --version; return; fi
  case $w1 in
${[...t.subs].map(([a, s]) => `    ${a}) subs=(${s.join(' ')}) ;;`).join('\n')}
  esac
  if (( \${#subs} > 0 && CURRENT == 3 )); then compadd -- $subs; return; fi
  key=$w1; (( \${#subs} > 0 )) && key="$w1 $w2"
  case $key in
${[...t.options].map(([k, o]) => `    ${q(k)}) opts=(${o.join(' ')}) ;;`).join('\n')}
  esac
  if [[ $PREFIX == -* ]]; then compadd -- $opts $globals; return; fi
  local i
  for (( i = 2; i < CURRENT; i++ )); do
    case \${words[i]} in -b|--bootstrap-server|-P|--profile) conn+=(\${words[i]} \${words[i+1]}) ;; esac
  done
  case $key in
    ${t.topicTaking.map(q).join('|')}) compadd -- \${(f)"$(tidelog topics list -q --timeout 3000 $conn 2>/dev/null)"} ;;
    *) _files ;;
  esac
}
if [[ "\${funcstack[1]}" == _tidelog ]]; then _tidelog "$@"; else compdef _tidelog tidelog; fi
`
}

const completion: Command = {
  name: 'completion',
  summary: 'print a shell completion script (bash or zsh)',
  usage: 'bash|zsh',
  options: [],
  async run(ctx) {
    const shell = ctx.args.positionals[0]
    const globals = ctx.globalOptions.map((o) => `--${o.name}`)
    const t = tree(ctx.commands, globals)
    if (shell === 'bash') await ctx.write(bash(t))
    else if (shell === 'zsh') await ctx.write(zsh(t))
    else throw new UsageError(`completion needs bash or zsh, got ${shell === undefined ? 'nothing' : JSON.stringify(shell)}`)
  },
}

export const completionCommands: Command[] = [completion]
