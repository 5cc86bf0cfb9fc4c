
# Added by redlock to clap's completion: the command that `redlock exec` runs
# is completed as a command line of its own, both after `--` and after NAME
# (`redlock exec NAME CMD ...`); everything else is left to _redlock above.

# The index in COMP_WORDS of the first word of exec's command, or nothing.
# A word that is only `=` or `:` (bash splits `--ttl=5s` and URLs there) is
# glued to its neighbours.
_redlock_exec_command_start() {
    local takes_value=" @TAKES_VALUE@ "
    local i=1 word seen_exec="" positionals=0 skip=""
    while ((i < COMP_CWORD)); do
        word=${COMP_WORDS[i]}
        while ((i + 2 <= COMP_CWORD)) && [[ ${COMP_WORDS[i + 1]} =~ ^[=:]+$ ]]; do
            word+=${COMP_WORDS[i + 1]}${COMP_WORDS[i + 2]}
            ((i += 2))
        done
        ((i++))
        if [[ -n $skip ]]; then
            skip=""
            continue
        fi
        case $word in
            --)
                [[ -n $seen_exec ]] || return 1
                echo "$i"
                return 0
                ;;
            -c | --command | -c* | --command=*)
                [[ -n $seen_exec ]] && return 1
                ;;
            --*=*) ;;
            --*)
                [[ $takes_value == *" $word "* ]] && skip=1
                ;;
            -?*)
                # A cluster of short flags: the first that takes a value
                # takes the rest of the word, or the next word.
                local j
                for ((j = 1; j < ${#word}; j++)); do
                    if [[ $takes_value == *" -${word:j:1} "* ]]; then
                        ((j == ${#word} - 1)) && skip=1
                        break
                    fi
                done
                ;;
            *)
                if [[ -z $seen_exec ]]; then
                    [[ $word == exec ]] || return 1
                    seen_exec=1
                else
                    ((positionals++))
                    if ((positionals == 2)); then
                        echo "$((i - 1))"
                        return 0
                    fi
                fi
                ;;
        esac
    done
    # The word being completed starts the command, unless it is an option.
    [[ -n $seen_exec && -z $skip && $positionals == 1 ]] || return 1
    [[ ${COMP_WORDS[COMP_CWORD]} != -* ]] || return 1
    echo "$COMP_CWORD"
}

_redlock_with_exec_command() {
    local start
    if start=$(_redlock_exec_command_start); then
        if declare -F _comp_command_offset >/dev/null; then
            _comp_command_offset "$start"
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$start"
        elif ((COMP_CWORD == start)); then
            COMPREPLY=($(compgen -c -- "${COMP_WORDS[COMP_CWORD]}"))
        else
            COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
        fi
        return 0
    fi
    _redlock "$@"
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _redlock_with_exec_command -o nosort -o bashdefault -o default redlock
else
    complete -F _redlock_with_exec_command -o bashdefault -o default redlock
fi
