package wordle

import "strings"

// wordleWords are the secret words games draw from, written here, not
// downloaded, so the builtin needs no network.
var wordleWords = strings.Fields(`
about above actor adult after again agent agree ahead alarm album alert
alive allow alone along alter among angel anger angle angry apart apple
apply arena argue arise array aside asset avoid award aware badly baker
basic beach begin being below bench birth black blade blame blank blast
blend blind block blood board boost booth bound brain brand bread break
breed brief bring broad brown build built buyer cabin cable candy carry
catch cause chain chair chart chase cheap check chest chief child
chose civil claim class clean clear click clock close cloud coach coast
could count court cover craft crane crash cream crime cross crowd crown
curve cycle daily dance dated dealt death delay depth dirty doubt dozen
draft drama drawn dream dress drink drive early earth eight elect elite
empty enemy enjoy enter entry equal error event every exact exist extra
faith false fault fiber field fifth fifty fight final first flash fleet
floor fluid focus force forth forty forum found frame frank fresh front
fruit fully funny giant given glass globe going grace grade grain grand
grant grass great green gross group grown guard guess guest guide happy
heart heavy horse hotel house human ideal image index inner input issue
joint judge knife known label large laser later laugh layer learn lease
least leave legal lemon level light limit local logic loose lower lucky
lunch magic major maker march match maybe mayor meant medal media metal
might minor mixed model money month moral motor mount mouse mouth movie
music needs never newly night noise north noted novel nurse ocean offer
often order other ought outer owner paint panel paper party peace phase
phone photo piano piece pilot pitch place plain plane plant plate point
pound power press price pride prime print prior prize proof proud prove
queen quick quiet quite radio raise range rapid ratio reach ready refer
relax reply right river robot rough round route royal rural scale scene
scope score sense serve seven shade shake shall shape share sharp sheep
sheet shelf shell shift shirt shock shoot short shown sight silly since
sixth sixty skill sleep slide small smart smile smoke solid solve sorry
sound south space spare speak speed spend spent split spoke sport staff
stage stake stand start state steam steel stick still stock stone stood
store storm story strip stuck study stuff style sugar suite super sweet
table taken taste teach teeth thank theme there thick thing think third
those three threw throw tight tired title today topic total touch tough
tower track trade train treat trend trial truck truly trust truth twice
under union unity until upper upset urban usual valid value video virus
visit vital voice waste watch water wheel where which while white whole
whose woman world worry worse worst worth would wound write wrong young
youth
`)
