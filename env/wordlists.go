package env

import "strings"

// The word lists the synthetic datasets draw from. They are written here,
// not downloaded, so the builtins need no network; they are common English
// words and common given and family names from many languages.

var vocabulary = strings.Fields(`
the a an of to in on at by for with from about over under after before
between through during without within across along around behind beyond
time year people way day man woman child world life hand part place case
week company system program question work government number night point
home water room mother area money story fact month lot right study book
eye job word business issue side kind head house service friend father
power hour game line end member law car city community name president
team minute idea kid body information back parent face others level
office door health person art war history party result change morning
reason research girl guy moment air teacher force education river garden
mountain window bridge forest ocean island village market library kitchen
river letter music picture language science winter summer autumn spring
small large old new good bad long short high low early late young great
quiet bright dark warm cold heavy light quick slow simple strange careful
happy gentle brave clever golden silver ancient modern empty full open
is was are were has had makes takes gives finds keeps brings builds sees
walks reads writes carries follows opens closes paints watches remembers
learns teaches answers shows holds moves turns starts leaves grows crosses
slowly quickly quietly carefully often never always sometimes together
again almost already still here there today tomorrow yesterday soon
`)

var firstNames = strings.Fields(`
Aaron Abigail Adrian Aisha Akira Alejandro Alice Amara Amelia Andrea
Anton Arjun Astrid Beatriz Benjamin Bianca Boris Carlos Carmen Chen
Chiara Clara Daniel Dmitri Elena Elias Emeka Emma Farah Felix Fatima
Gabriel Grace Hana Hassan Helena Hugo Ibrahim Ines Ingrid Isaac Ivan
Jakob Jasmine Javier Julia Kai Kamala Kenji Klaus Laila Lars Leila
Lucas Lucia Mahmoud Maya Mei Mikhail Miriam Nadia Naomi Nikolai Nora
Olga Omar Oscar Pablo Paula Pedro Priya Rafael Ravi Rosa Samuel Sara
Sergei Sofia Soren Tariq Thomas Tomas Valentina Victor Wei Yara Yusuf
Zainab Zoe
`)

var lastNames = strings.Fields(`
Abbott Adeyemi Alvarez Andersen Bauer Becker Bianchi Brennan Castillo
Chandra Cohen Costa Dubois Eriksson Fischer Fontaine Garcia Gomez
Gonzalez Gupta Haddad Hansen Hoffmann Horvat Ibrahim Ivanova Jansen
Jensen Kaplan Kato Kaur Khan Kim Kowalski Kumar Larsen Laurent Lehmann
Lindqvist Lopez Marino Martins Mendez Molina Moreau Murphy Nakamura
Navarro Nguyen Nielsen Novak Okafor Oliveira Olsen Park Patel Petrov
Pereira Quinn Ramos Reyes Ricci Rossi Russo Sato Schmidt Schneider
Silva Singh Sokolov Suzuki Tanaka Torres Vargas Vogel Wagner Walsh
Weber Wright Yamamoto Yilmaz Zhang Zielinski
`)

// wordleWords are the builtin secret words of wordle: common five-letter
// English words (TextArena draws from a larger English list).
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
